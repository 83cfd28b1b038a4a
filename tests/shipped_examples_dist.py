"""Real log lines for the distributed, launcher, compile and serving error types of the shipped KB
(merged into test_shipped_kb.EXAMPLES). The URL above each line is where it was posted."""

from __future__ import annotations

EXAMPLES_DIST: dict[str, list[str]] = {
    "process-group-not-initialized": [
        # https://github.com/OptimalScale/LMFlow/issues/359
        "RuntimeError: Default process group has not been initialized, please make sure to call "
        "init_process_group.",
        # https://github.com/congvvc/InstructSeg/issues/7
        "ValueError: Default process group has not been initialized, please make sure to call "
        "init_process_group.",
        # https://github.com/csebuetnlp/xl-sum/issues/16 (title)
        "Default process group is not being initialized",
        # https://github.com/OptimalScale/LMFlow/issues/359
        '  File "/opt/conda/lib/python3.8/site-packages/torch/distributed/distributed_c10d.py", line 697, '
        "in _get_default_group",
    ],
    "distributed-rendezvous-failed": [
        # https://github.com/showlab/Tune-A-Video/issues/90
        "RuntimeError: The server socket has failed to listen on any local network address. The server "
        "socket has failed to bind to [::]:29500 (errno: 98 - Address already in use). The server socket "
        "has failed to bind to 0.0.0.0:29500 (errno: 98 - Address already in use).",
        # https://github.com/NVIDIA/Megatron-LM/issues/343
        "RuntimeError: Address already in use",
        # https://github.com/HRNet/HRNet-Semantic-Segmentation/issues/35 (title)
        "ValueError: Error initializing torch.distributed using env:// rendezvous: environment variable "
        "RANK expected, but not set",
        # https://github.com/pytorch/pytorch/issues/107021
        "[E socket.cpp:860] [c10d] The client socket has timed out after 60s while trying to connect to "
        "192.0.0.1:1234",
        # https://github.com/pytorch/pytorch/issues/107021
        "torch.distributed.elastic.rendezvous.api.RendezvousConnectionError: The connection to the C10d "
        "store has failed. See inner exception for details.",
        # https://github.com/vllm-project/vllm/issues/19670 (title)
        "torch.distributed.DistNetworkError: The client socket has timed out after 600000ms while trying "
        "to connect to (172.17.0.9, 46229).",
        # https://github.com/lzhxmu/CPPO/issues/6
        "[E521 15:43:02.707888867 TCPStore.cpp:318] [c10d] TCP client failed to connect/validate to host "
        "172.18.21.4:37907 - timed out (try=1, timeout=600000ms): The client socket has timed out after "
        "600000ms while trying to connect to (172.18.21.4, 37907).",
        # https://github.com/facebookresearch/av_hubert/issues/19
        '    "message": "RendezvousTimeoutError: ",',
        # https://github.com/pytorch/pytorch/issues/116974 (title)
        "DDP RendezvousClosedError Exception",
        # https://github.com/NVIDIA/Megatron-LM/issues/782 (title)
        "RuntimeError: Timed out initializing process group in store based barrier on rank: 0, for key: "
        "store_based_barrier_key:1 (world_size=2, worker_count=1, timeout=0:10:00)",
        # https://github.com/pytorch/pytorch/issues/148283
        "RuntimeError: use_libuv was requested but PyTorch was build without libuv support",
        # https://github.com/meta-llama/llama/issues/391
        "[W ..\\torch\\csrc\\distributed\\c10d\\socket.cpp:601] [c10d] The client socket has failed to "
        "connect to [kubernetes.docker.internal]:12345 (system error: 10049 - unknown error).",
    ],
    "torchrun-child-failed": [
        # https://github.com/microsoft/SoftTeacher/issues/42
        '  msg: "Process failed with exitcode 1"',
        # https://github.com/Vision-CAIR/MiniGPT-4/issues/237
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
        # https://github.com/Vision-CAIR/MiniGPT-4/issues/237
        "Root Cause (first observed failure):",
        # https://github.com/Vision-CAIR/MiniGPT-4/issues/237
        "  exitcode  : 1 (pid: 78970)",
        # https://github.com/Vision-CAIR/MiniGPT-4/issues/237
        "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html",
        # https://github.com/lzhxmu/CPPO/issues/6
        "  traceback : Signal 9 (SIGKILL) received by PID 14750",
        # https://github.com/hpcaitech/ColossalAI/issues/3514 (title)
        "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -9) local_rank: 3 "
        "(pid: 812917) of binary",
        # https://github.com/hpcaitech/ColossalAI/issues/3514
        "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -9) local_rank: 3 "
        "(pid: 812917) of binary: /data/chenhao/anaconda3/envs/ColossalAI-Chat/bin/python",
        # https://github.com/hpcaitech/ColossalAI/issues/3514
        "WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 812914 closing signal SIGTERM",
        # https://github.com/megvii-research/MSPN/issues/31
        "subprocess.CalledProcessError: Command '['/home/yh/anaconda3/bin/python', '-u', 'train.py', "
        "'--local_rank=0']' returned non-zero exit status 1.",
        # https://github.com/deepspeedai/DeepSpeedExamples/issues/626
        "[2023-07-10 04:26:35,999] [ERROR] [launch.py:324:sigkill_handler] "
        "['/global/D1/homes/sushant/sushanta/venv/bin/python3.10', '-u', 'trainCLM.py', '--local_rank=1', "
        "'--deepspeed', '/home/sushant/D1/sushanta/try/nepaligpt/clm/config/deepspeed_config.json'] exits "
        "with return code = -11",
        # https://github.com/deepspeedai/DeepSpeed/issues/1581
        "[2021-11-21 08:32:07,148] [INFO] [launch.py:131:sigkill_handler] Killing subprocess 250621",
    ],
    "serving-engine-died": [
        # https://github.com/instructlab/instructlab/issues/3466
        "vLLM failed to start.  Retry with --enable-serving-output to learn more about the failure.",
        # https://github.com/runpod-workers/worker-vllm/issues/276
        "(EngineCore_DP0 pid=469) ERROR 03-11 17:57:10 [multiproc_executor.py:783] "
        "WorkerProc failed to start.",
        # https://github.com/vllm-project/vllm/issues/27194
        "(APIServer pid=1) ERROR 10-20 03:20:50 [async_llm.py:485[] vllm.v1.engine.exceptions."
        "EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the root cause.",
        # https://github.com/vllm-project/vllm/issues/7356 (title)
        "[Bug]: vllm.engine.async_llm_engine.AsyncEngineDeadError: Background loop has errored already.",
        # https://github.com/vllm-project/vllm/issues/23176
        "(APIServer pid=1179246) RuntimeError: Engine core initialization failed. See root cause above. "
        "Failed core proc(s): {}",
        # https://github.com/vllm-project/vllm/issues/10024
        "ERROR 11-05 12:03:00 client.py:250] RuntimeError: Engine loop has died",
        # https://github.com/vllm-project/vllm/issues/10024
        "CRITICAL 11-05 12:03:03 launcher.py:99] MQLLMEngine is already dead, terminating server process",
        # https://github.com/LMCache/LMCache/issues/411
        "ERROR 03-17 08:02:04 serving_chat.py:596] vllm.engine.multiprocessing.MQEngineDeadError: Engine "
        "loop is not running. Inspect the stacktrace to find the original error: AssertionError('Error in "
        "model execution (input dumped to /tmp/err_execute_model_input_20250317-080027.pkl): ').",
        # https://github.com/sgl-project/sglang/issues/15235
        "[12-16 14:27:08] Rank 0 scheduler is dead. Please check if there are relevant logs.",
        # https://github.com/sgl-project/sglang/issues/5602
        "[2025-04-21 04:13:43] Received sigquit from a child process. It usually means the child failed.",
        # https://github.com/sgl-project/sglang/issues/5602
        "[2025-04-21 04:13:43 TP3] Scheduler hit an exception: Traceback (most recent call last):",
        # https://github.com/huggingface/text-generation-inference/issues/1627
        "2024-03-06T17:53:31.149443Z ERROR text_generation_launcher: Shard 0 failed to start",
        # https://github.com/huggingface/text-generation-inference/issues/1627
        "2024-03-06T17:53:31.052444Z ERROR shard-manager: text_generation_launcher: Shard process was "
        "signaled to shutdown with signal 4 rank=0",
    ],
    "torch-compile-failed": [
        # https://github.com/FoundationVision/Infinity/issues/31
        "torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:",
        # https://github.com/unslothai/unsloth/issues/2230 (title)
        "BackendCompilerFailed: backend='inductor' raised: SystemError: PY_SSIZE_T_CLEAN macro must be "
        "defined for '#' formats",
        # https://github.com/pytorch/pytorch/issues/187337 (title)
        "[inductor] model failed with torch._inductor.exc.InductorError: AssertionError: vr must not be "
        "None for symbol q3",
        # https://github.com/pytorch/pytorch/issues/114060 (title)
        "LoweringException: AssertionError: should have been handled in replace_random.py",
        # https://github.com/jianchang512/ChatTTS-ui/issues/36
        "RuntimeError: Dynamo is not supported on Python 3.12+",
        # https://github.com/kijai/ComfyUI-WanVideoWrapper/issues/978
        "torch._inductor.exc.TritonMissing: Cannot find a working triton installation. Either the package "
        "is not installed or it is too old. More information on installing Triton can be found at: "
        "https://github.com/triton-lang/triton",
        # https://github.com/karpathy/nanoGPT/issues/157
        "RuntimeError: Found NVIDIA GeForce GTX 1080 which is too old to be supported by the triton GPU "
        "compiler, which is used as the backend. Triton only supports devices of CUDA Capability >= 7.0, "
        "but your device is of CUDA capability 6.1",
        # https://github.com/kijai/ComfyUI-WanVideoWrapper/issues/92
        "You can suppress this exception and fall back to eager by setting:",
        # https://github.com/apple/ml-cross-entropy/issues/41
        'Set TORCH_LOGS="+dynamo" and TORCHDYNAMO_VERBOSE=1 for more information',
    ],
    "triton-compile-failed": [
        # https://github.com/vllm-project/vllm/issues/12498 (title)
        "[Bug]: triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 66560, "
        "Hardware limit: 65536. Reducing block sizes or `num_stages` may help.",
        # https://github.com/triton-lang/triton/issues/130
        '"triton.code_gen.OutOfResources: out of resource: shared memoryRequired: 65536Hardware limit: '
        '49152"',
        # https://github.com/Hprairie/Bi-Mamba2/issues/4
        "triton.compiler.errors.CompilationError: at 34:23:",
        # https://github.com/Dao-AILab/flash-attention/issues/239
        "CompilationError: at 78:24:",
        # https://github.com/triton-lang/triton/issues/8539
        "riton.runtime.errors.PTXASError: PTXAS error: Internal Triton PTX codegen error",
        # https://github.com/triton-lang/triton/issues/8539
        "ptxas fatal   : Value 'sm_121a' is not defined for option 'gpu-name'",
        # https://github.com/pytorch/torchdynamo/issues/886 (title)
        "[inductor] RuntimeError: Internal Triton PTX codegen error",
        # https://github.com/jianfch/stable-ts/issues/259
        "AssertionError: libcuda.so cannot found!",
        # https://github.com/triton-lang/triton/issues/8657 (title)
        "Triton Error [CUDA]: an illegal instruction was encountered",
    ],
}
