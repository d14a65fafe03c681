"""Shared fixtures (issue 43): the device and dtype a test runs in, and seeded attention inputs.

``device_dtype`` runs a test on the CPU in float32 always, and also on a GPU in bfloat16 when one is present
(where notebooks' ``FULL = True`` settings are meant to run), so the attention and cache equivalence tests
cover both; ``tol`` is the tolerance for that dtype. ``qkv`` and ``mask`` are seeded inputs on that device:
q (B, H, Tq, d_k), k and v (B, H, Tk, d_k), and a right-padded key mask (B, 1, 1, Tk), True = may attend.
"""

from __future__ import annotations

import pytest

try:
    import torch
except ModuleNotFoundError:   # the website's environment (.venv-site, tests/site) has no PyTorch and uses none of these
    torch = None

DEVICE_DTYPES = [] if torch is None else \
    [("cpu", torch.float32)] + ([("cuda", torch.bfloat16)] if torch.cuda.is_available() else [])
TOLERANCE = {} if torch is None else {
    torch.float32: dict(atol=1e-5, rtol=1e-5), torch.float64: dict(atol=1e-10, rtol=1e-10),
    torch.bfloat16: dict(atol=3e-2, rtol=3e-2), torch.float16: dict(atol=3e-3, rtol=3e-3)}
B, H, T_Q, T_K, D_K = 2, 2, 5, 7, 8


@pytest.fixture(params=DEVICE_DTYPES, ids=[f"{d}-{str(t).removeprefix('torch.')}" for d, t in DEVICE_DTYPES])
def device_dtype(request) -> tuple[str, torch.dtype]:
    return request.param


@pytest.fixture
def tol(device_dtype) -> dict:
    return TOLERANCE[device_dtype[1]]


@pytest.fixture
def qkv(device_dtype) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    device, dtype = device_dtype
    g = torch.Generator().manual_seed(0)
    q = torch.randn(B, H, T_Q, D_K, generator=g)
    k, v = torch.randn(B, H, T_K, D_K, generator=g), torch.randn(B, H, T_K, D_K, generator=g)
    return tuple(t.to(device=device, dtype=dtype) for t in (q, k, v))


@pytest.fixture
def mask(device_dtype) -> torch.Tensor:
    lengths = torch.tensor([T_K, 4])  # the first sentence unpadded, as pad_sequences pads to the longest
    return (torch.arange(T_K)[None] < lengths[:, None])[:, None, None, :].to(device_dtype[0])
