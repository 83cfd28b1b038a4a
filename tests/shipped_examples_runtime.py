"""Real output lines for the CUDA-runtime, code and numerics error types of the base layer, each under
the URL of the public thread it was copied from; tests/test_shipped_kb.py merges them into EXAMPLES."""

from __future__ import annotations

EXAMPLES_RUNTIME: dict[str, list[str]] = {
    "cuda-unknown-error": [
        # https://github.com/AUTOMATIC1111/stable-diffusion-webui/issues/1
        "RuntimeError: CUDA error: unknown error",
        # https://github.com/liunian-Jay/MU-GOT/issues/7
        "[rank0]: RuntimeError: CUDA error: unknown error",
        # https://github.com/longcw/faster_rcnn_pytorch/issues/63
        "RuntimeError: cuda runtime error (30) : unknown error at "
        "/opt/conda/conda-bld/pytorch_1501972792122/work/pytorch-0.1.12/torch/lib/THC/generic/THCStorage.cu:66",
        # https://github.com/pytorch/pytorch/issues/18981
        "THCudaCheck FAIL file=..\\aten\\src\\THC\\THCGeneral.cpp line=87 error=30 : unknown error",
        # https://github.com/nanoporetech/medaka/issues/431
        "2023-04-03 13:19:50.721925: E tensorflow/stream_executor/cuda/cuda_driver.cc:271] failed call "
        "to cuInit: "
        "CUDA_ERROR_UNKNOWN: unknown error",
    ],
    "cuda-forked-subprocess": [
        # https://github.com/facebookresearch/pycls/issues/183
        "RuntimeError: Cannot re-initialize CUDA in forked subprocess. To use CUDA with multiprocessing, "
        "you must use the 'spawn' start method",
        # https://github.com/traveller59/spconv/issues/408
        "To use CUDA with multiprocessing, you must use the 'spawn' start method",
        # https://github.com/pytorch/pytorch/issues/21092
        "RuntimeError: CUDA error: initialization error",
        # https://github.com/pytorch/pytorch/issues/17357
        "RuntimeError: cuda runtime error (3) : initialization error at ../torch/csrc/cuda/Module.cpp:33",
        # https://github.com/inducer/pycuda/issues/137
        "LogicError: cuInit failed: initialization error",
    ],
    "cuda-invalid-argument": [
        # https://github.com/Comfy-Org/ComfyUI/issues/10862
        "RuntimeError: CUDA error: invalid argument",
        # https://github.com/triton-lang/triton/issues/7967 (title)
        "RuntimeError: CUDA driver error: invalid argument",
        # https://github.com/pytorch/pytorch/issues/48573 (title)
        '"RuntimeError: CUDA error: invalid configuration argument" when operating on some GPU tensors',
        # https://github.com/JDAI-CV/DCL/issues/60
        "RuntimeError: cuda runtime error (11) : invalid argument at "
        "/opt/conda/conda-bld/pytorch_1535491974311/work/aten/src/THC/THCGeneral.cpp:663",
        # https://github.com/pytorch/pytorch/issues/15620
        "cuda runtime error(11):invalid argumen at /pytorch/torch/lib/THC/generic/THCTensorCopy.c:70",
    ],
    "cuda-operation-not-supported": [
        # https://github.com/Comfy-Org/ComfyUI/issues/2931
        "RuntimeError: CUDA error: operation not supported",
        # https://github.com/Comfy-Org/ComfyUI/issues/4994
        "CUDA error: operation not supported CUDA kernel errors might be asynchronously reported at some "
        "other API call, so the stacktrace below might be incorrect.",
        # https://github.com/tunib-ai/parallelformers/issues/44 (title)
        "RuntimeError: CUDA error: peer access is not supported between these two devices",
        # https://github.com/ggml-org/llama.cpp/issues/10152 (title)
        "Bug: CUDA error: peer access has not been enabled",
        # https://github.com/pytorch/pytorch/issues/25019
        "RuntimeError: cuda runtime error (60) : peer mapping resources exhausted at "
        "/opt/conda/conda-bld/pytorch_1556653114079/work/aten/src/THC/THCGeneral.cpp:164",
        # https://github.com/NVIDIA/nccl/issues/356
        "2020-07-24 06:07:59.775126: W tensorflow/compiler/xla/service/platform_util.cc:210] unable to "
        "create "
        "StreamExecutor for CUDA:0: failed initializing StreamExecutor for CUDA device ordinal 0: Internal: "
        "failed call to cuDevicePrimaryCtxRetain: CUDA_ERROR_TOO_MANY_PEERS: peer mapping resources "
        "exhausted",
        # https://github.com/flatironinstitute/finufft/pull/468
        "CUDA error at /home/janden/projects/finufft/src/cuda/memtransfer_wrapper.cu:33 "
        'code=801(cudaErrorNotSupported) "cudaMallocAsync(&d_plan->binsize, numbins * sizeof(int), s',
        # https://github.com/OpenPPL/ppl.nn/issues/8
        "[ERROR][2021-07-05 06:38:36.723][buffered_cuda_allocator.cc:91] cuMemAddressReserve failed: "
        "operation not supported",
    ],
    "autograd-inplace-modification": [
        # https://github.com/tamakoji/pytorch-syncbn/issues/4
        "RuntimeError: one of the variables needed for gradient computation has been modified by an inplace "
        "operation",
        # https://github.com/NVlabs/FUNIT/issues/23
        "[torch.FloatTensor [5, 6]], which is output 0 of TBackward, is at version 2; expected version "
        "1 instead. ",
        # https://github.com/NVlabs/FUNIT/issues/23
        "Hint: enable anomaly detection to find the operation that failed to compute its gradient, with "
        "torch.autograd.set_detect_anomaly(True).",
        # https://github.com/WOW5678/CompNet/issues/2
        "[torch.FloatTensor [1, 2, 2]], which is output 0 of AsStridedBackward0, is at version 1; expected "
        "version 0 instead. Hint: the backtrace further above shows the operation that failed to compute its "
        "gradient. The variable in question was changed in there or anywhere later. Good luck!",
    ],
    "checkpoint-load-failed": [
        # https://github.com/cxzhou95/XLSR/issues/13
        "RuntimeError: Error(s) in loading state_dict for XLSR:",
        # https://github.com/cxzhou95/XLSR/issues/13
        '        Missing key(s) in state_dict: "Gblocks.0.conv0.conv2d_block.0.weight", '
        '"Gblocks.0.conv0.conv2d_block.0.bias"',
        # https://github.com/mamonraab/Data-efficient-video-transformer/issues/1
        "size mismatch for 4.weight: copying a param with shape torch.Size([1024, 10240]) from checkpoint, "
        "the shape in current model is torch.Size([1024, 20480]).",
        # https://github.com/hezhangsprinter/DID-MDN/issues/7
        "KeyError: 'unexpected key \"conv_refin.weight\" in state_dict'.",
        # https://github.com/NVIDIA/pix2pixHD/issues/243
        "RuntimeError: [enforce fail at inline_container.cc:145] . PytorchStreamReader failed reading zip "
        "archive: failed finding central directory",
        # https://github.com/0Xiaohei0/LocalAIVtuber/issues/51
        "_pickle.UnpicklingError: Weights only load failed. This file can still be loaded, to do so you have "
        "two options, do those steps only if you trust the source of the checkpoint.",
        # https://github.com/0Xiaohei0/LocalAIVtuber/issues/51
        "        WeightsUnpickler error: Unsupported global: GLOBAL utils.HParams was not an allowed "
        "global by "
        "default.",
        # https://github.com/kleinlee/DH_live/issues/22
        "RuntimeError: Attempting to deserialize object on a CUDA device but torch.cuda.is_available() "
        "is False. "
        "If you are running on a CPU-only machine, please use torch.load with "
        "map_location=torch.device('cpu') "
        "to map your storages to the CPU.",
    ],
    "index-32bit-overflow": [
        # https://github.com/hustvl/BoxTeacher/issues/11
        "RuntimeError: input tensor must fit into 32-bit index math",
        # https://github.com/sunny2109/DSTNet-plus/issues/4
        "RuntimeError: Expected canUse32BitIndexMath(input) && canUse32BitIndexMath(output) to be true, but "
        "got false.  (Could this error message be improved?  If so, please report an enhancement request to "
        "PyTorch.)",
        # https://github.com/tensorflow/tensorflow/issues/23107 (title)
        "Number of elements was larger than representable by 32-bit output type",
    ],
    "shape-mismatch": [
        # https://github.com/bharat-b7/RVH_Mesh_Registration/issues/19 (title)
        "RuntimeError: mat1 and mat2 shapes cannot be multiplied (20670x300 and 10x1)",
        # https://github.com/sujoyp/wtalc-pytorch/issues/17 (title)
        "RuntimeError: The size of tensor a (101) must match the size of tensor b (20) at non-singleton "
        "dimension 1",
        # https://github.com/pppLang/SKNet/issues/19
        "RuntimeError: size mismatch, m1: [12288 x 3], m2: [1024 x 196] at "
        "/pytorch/aten/src/THC/generic/THCTensorMathBlas.cu:290",
        # https://github.com/LambdaLabsML/examples/issues/39
        "RuntimeError: Given groups=1, weight of size [128, 3, 3, 3], expected input[3, 1, 512, 512] to have "
        "3 channels, but got 1 channels instead",
    ],
    "dtype-mismatch": [
        # https://github.com/hikariming/chat-dataset-baseline/issues/78 (title)
        "RuntimeError: expected scalar type Half but found Float",
        # https://github.com/weiyifan1023/Neeko/issues/6 (title)
        "RuntimeError: mat1 and mat2 must have the same dtype, but got Float and Half",
        # https://github.com/Vaibhavs10/fast-whisper-finetuning/issues/14
        "RuntimeError: expected mat1 and mat2 to have the same dtype, but got: c10::Half != float",
        # https://github.com/Yu-Fangxu/COLD-Attack/issues/20
        "RuntimeError: Input type (torch.cuda.HalfTensor) and weight type (torch.cuda.FloatTensor) should be "
        "the same",
        # https://github.com/ayooshkathuria/pytorch-yolo-v3/issues/7 (title)
        "RuntimeError: Input type (CUDAFloatTensor) and weight type (CUDAHalfTensor) should be the same",
        # https://github.com/Chenrj233/LMEDR/issues/8
        "Engine run is terminating due to exception: Expected object of scalar type Long but got scalar type "
        "Int for argument #2 'target' in call to _thnn_nll_loss_forward",
        # https://github.com/jik876/hifi-gan/issues/44
        "RuntimeError: Expected tensor for argument #1 'grad_output' to have the same type as tensor for "
        "argument #2 'weight'; but type torch.cuda.HalfTensor does not equal torch.cuda.FloatTensor (while "
        "checking arguments for cudnn_convolution_backward_input)",
    ],
    "non-finite-loss": [
        # https://github.com/pytorch/pytorch/issues/51196
        "RuntimeError: Function 'MulBackward0' returned nan values in its 0th output. ",
        # https://github.com/pytorch/pytorch/issues/38714
        "RuntimeError: Function 'PowBackward1' returned nan values in its 1st output.",
        # https://github.com/gist-ailab/uoais/issues/16
        "FloatingPointError: Loss became infinite or NaN at iteration=0!",
        # https://github.com/csuhan/opendet2/issues/29
        "loss_dict = {'loss_cls_ce': nan, 'loss_box_reg': nan, 'loss_ins_con': 0.0, 'loss_cls_up': nan}",
        # https://github.com/pytorch/pytorch/issues/156015
        "D:\\anaconda3\\Lib\\site-packages\\torch\\autograd\\graph.py:824: UserWarning: Error detected in "
        "MmBackward0. Traceback of forward call that caused the error:",
    ],
    "gradscaler-error": [
        # https://github.com/MooreThreads/Moore-AnimateAnyone/issues/153
        "ValueError: Attempting to unscale FP16 gradients.",
        # https://github.com/jahongir7174/EfficientNetV2/issues/8
        "AssertionError: No inf checks were recorded for this optimizer.",
    ],
}
