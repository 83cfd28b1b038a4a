"""kbgen: a knowledge base of CUDA/PyTorch failures that runs.

Importing this package is cheap on purpose: no pydantic, no mkdocs and never torch.
"""

__version__ = "0.1.0"
