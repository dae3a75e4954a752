#!/usr/bin/env python3
"""PyTorch oracle for tcompile's eager ops.

    python3 tests/oracle_torch.py [ORACLE_DUMP...] [--keep] [--threads 1,3]
    python3 tests/oracle_torch.py --calibrate

Every case below is defined here once: its inputs (deterministic, seeded by
the case name), the op's parameters, the reference in torch and the
tolerance.  The script writes the inputs as raw little-endian files plus a
cases.txt into a temp dir, runs the C program (tests/oracle_dump.c) on it once
per thread count (and per binary, when given several: tests/oracle.sh also
passes one built with -DTC_PARALLEL_MIN_WORK=2, so that small cases take the
threaded paths too), and compares what each run wrote with the reference.

The reference is torch evaluated in float64 on the same float32 inputs, so
it is (close to) the exact answer, and a case passes when every element obeys
|c - ref| <= atol + rtol * |ref|.  Each line also prints torch's own float32
error against the same reference ("torch32"), which is what an f32 tolerance
has to accommodate: --calibrate prints only that, and a case whose torch32
error already breaks its tolerance is flagged, because then the tolerance,
not the library, would be wrong.

Without an argument the script compiles tests/oracle_dump.c itself with $CC
(default gcc).  The last line is "N passed, N failed, N skipped"; the exit
status is nonzero when anything failed.
"""

import array
import math
import os
import shutil
import subprocess
import sys
import tempfile
import zlib

SKIP_LINE = "SKIP oracle: python3-torch not installed (apt-get install python3-torch)"

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    print(SKIP_LINE)
    print("0 passed, 0 failed, 1 skipped")
    sys.exit(0)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FLT_EPSILON = 1.1920928955078125e-07

# Tolerance classes (atol, rtol), for float32 results of O(1) inputs.
POINTWISE = (1e-6, 1e-5)
ROW = (1e-5, 1e-5)          # softmax, norms: a reduction then pointwise
REDUCE = (1e-5, 1e-5)
CONTRACT = (1e-4, 1e-5)     # matmul / conv / attention; K up to a few hundred
EXACT = (0.0, 0.0)          # selections (max pool, gather, pad, argmax)

HALF = {"f16": torch.float16, "bf16": torch.bfloat16}
F16 = (1e-6, 1e-3)          # one f16 ulp is 2^-10 relative: rounding twice may cost one
BF16 = (1e-6, 8e-3)         # one bf16 ulp is 2^-7

# tc_result in enum order (src/api.h), to name the codes oracle_dump reports.
RESULT_NAMES = ["TC_OK", "TC_ERR_INVALID_ARG", "TC_ERR_NULL", "TC_ERR_SHAPE", "TC_ERR_DTYPE",
                "TC_ERR_AXIS", "TC_ERR_INDEX", "TC_ERR_OVERFLOW", "TC_ERR_OOM",
                "TC_ERR_UNSUPPORTED", "TC_ERR_STATE", "TC_ERR_IO"]


# ---------------------------------------------------------------------------
# Case definitions
# ---------------------------------------------------------------------------

class Case:
    def __init__(self, name, op, inputs, params, ref, tol, dtype="f32", note="", raises=None,
                 view=None):
        self.name = name
        self.op = op
        self.inputs = inputs      # torch tensors (f32 f16 bf16 i32 bool) or None
        self.params = params      # numbers, passed to C as text
        self.ref = ref            # fn(*inputs) -> tensor, any float dtype
        self.atol, self.rtol = tol
        self.dtype = dtype        # the result dtype the contract promises
        self.note = note
        self.raises = raises      # a tc_result name: torch raises, C must fail so
        self.view = view          # "t"/"s": C sees input 0 as a strided view


class Gen:
    """Deterministic inputs: each case draws from its own seeded generator,
    so adding or reordering cases changes nobody else's data."""

    def __init__(self, name):
        self.g = torch.Generator().manual_seed(zlib.crc32(name.encode()))

    def randn(self, *shape, scale=1.0, offset=0.0):
        return torch.randn(*shape, generator=self.g, dtype=torch.float32) * scale + offset

    def rand(self, *shape, lo=0.0, hi=1.0):
        return torch.rand(*shape, generator=self.g, dtype=torch.float32) * (hi - lo) + lo

    def randint(self, lo, hi, *shape):
        return torch.randint(lo, hi, shape, generator=self.g, dtype=torch.int32)


def sdpa_ref(q, k, v, mask=None, is_causal=False, scale=0.0):
    """torch 1.13 has no F.scaled_dot_product_attention: its definition,
    as torch 2.x documents it (which asserts on a mask together with
    is_causal)."""
    if is_causal and mask is not None:
        raise RuntimeError("attn_mask together with is_causal")
    if scale <= 0:
        scale = 1.0 / math.sqrt(q.shape[-1])
    s = q @ k.transpose(-2, -1) * scale
    L, S = s.shape[-2], s.shape[-1]
    if is_causal:
        keep = torch.ones(L, S, dtype=torch.bool).tril()
        s = s.masked_fill(~keep, float("-inf"))
    if mask is not None:
        if mask.dtype == torch.bool:
            s = s.masked_fill(~mask, float("-inf"))
        else:
            s = s + mask
    return torch.softmax(s, dim=-1) @ v


def rms_norm_ref(x, w, nnorm, eps):
    """torch 1.13 has no rms_norm: x * rsqrt(mean(x^2) + eps) * w."""
    dims = tuple(range(-nnorm, 0))
    y = x * torch.rsqrt(x.pow(2).mean(dim=dims, keepdim=True) + eps)
    return y * w if w is not None else y


def argmax_ref(x, axes, keepdim):
    """The contract: over several axes, the index into the row-major
    flattened reduced axes."""
    if not axes:
        r = torch.argmax(x)
        return r.reshape([1] * x.dim()) if keepdim else r
    axes = [a % x.dim() for a in axes]
    rest = [d for d in range(x.dim()) if d not in axes]
    y = x.permute(*rest, *axes).reshape(*[x.shape[d] for d in rest], -1)
    r = y.argmax(dim=-1)
    if keepdim:
        r = r.reshape([1 if d in axes else x.shape[d] for d in range(x.dim())])
    return r


def trunc_sat_i32(x):
    """The contract's float -> i32: toward zero, NaN -> 0, saturating."""
    return x.double().nan_to_num(0.0).clamp(-2147483648.0, 2147483647.0).trunc()


def gpt2_block_ref(x, l1w, l1b, aw, ab, pw, pb, l2w, l2b, fw, fb, f2w, f2b, n_head):
    B, T, C = x.shape
    h = F.layer_norm(x, (C,), l1w, l1b, 1e-5)
    q, k, v = F.linear(h, aw, ab).split(C, dim=-1)
    q, k, v = (t.reshape(B, T, n_head, C // n_head).transpose(1, 2) for t in (q, k, v))
    y = sdpa_ref(q, k, v, None, True)
    y = y.transpose(1, 2).reshape(B, T, C)
    x = x + F.linear(y, pw, pb)
    h = F.gelu(F.linear(F.layer_norm(x, (C,), l2w, l2b, 1e-5), fw, fb), approximate="tanh")
    return x + F.linear(h, f2w, f2b)


def pool_params(k, s, p, d=(1, 1), ceil=0, exclude_pad=0):
    return [k[0], k[1], s[0], s[1], p[0], p[1], d[0], d[1], ceil, exclude_pad]


def build_cases():
    cases = []

    def add(name, op, inputs, params, ref, tol, **kw):
        cases.append(Case(name, op, inputs, params, ref, tol, **kw))

    # --- softmax / log_softmax -------------------------------------------
    g = Gen("softmax_last")   # 64000 elements: past the parallel threshold
    add("softmax_last", "softmax", [g.randn(64, 1000, scale=8.0)], [-1],
        lambda x: torch.softmax(x, -1), ROW)
    g = Gen("softmax_mid")
    add("softmax_mid", "softmax", [g.randn(4, 33, 5, scale=3.0)], [1],
        lambda x: torch.softmax(x, 1), ROW)
    g = Gen("softmax_strided")
    add("softmax_strided", "softmax", [g.randn(24, 40, scale=3.0)], [-1],
        lambda x: torch.softmax(x, -1), ROW, view="t", note="rows with stride 24")
    g = Gen("softmax_large")   # max-subtraction: exp(1000) overflows otherwise
    add("softmax_large", "softmax", [g.randn(3, 50, scale=2.0, offset=1000.0)], [-1],
        lambda x: torch.softmax(x, -1), ROW)
    g = Gen("log_softmax_last")
    add("log_softmax_last", "log_softmax", [g.randn(32, 513, scale=4.0)], [-1],
        lambda x: torch.log_softmax(x, -1), ROW)
    g = Gen("log_softmax_dim0")
    add("log_softmax_dim0", "log_softmax", [g.randn(7, 3, 5, scale=4.0)], [0],
        lambda x: torch.log_softmax(x, 0), ROW)

    # --- layer_norm / rms_norm ---------------------------------------------
    g = Gen("layer_norm_affine")
    add("layer_norm_affine", "layer_norm",
        [g.randn(8, 16, 96), g.randn(96), g.randn(96)], [1, 1e-5],
        lambda x, w, b: F.layer_norm(x, (96,), w, b, 1e-5), ROW)
    g = Gen("layer_norm_offset")   # mean 300, std 1: E[x^2]-E[x]^2 in f32 fails
    add("layer_norm_offset", "layer_norm", [g.randn(4, 256, offset=300.0), None, None],
        [1, 1e-5], lambda x: F.layer_norm(x, (256,), None, None, 1e-5), (1e-4, 1e-5),
        note="mean 300: ulp(300)=3e-5 bounds any f32 result; one-pass f32 variance fails")
    g = Gen("layer_norm_2d")
    add("layer_norm_2d", "layer_norm", [g.randn(6, 5, 7, 8), g.randn(7, 8), None],
        [2, 1e-5], lambda x, w: F.layer_norm(x, (7, 8), w, None, 1e-5), ROW)
    g = Gen("rms_norm")
    add("rms_norm", "rms_norm", [g.randn(4, 6, 32), g.randn(32)], [1, FLT_EPSILON],
        lambda x, w: rms_norm_ref(x, w, 1, FLT_EPSILON), ROW)
    g = Gen("rms_norm_2d")
    add("rms_norm_2d", "rms_norm", [g.randn(3, 6, 32, scale=0.1), None], [2, 1e-6],
        lambda x: rms_norm_ref(x, None, 2, 1e-6), ROW)

    # --- gelu ------------------------------------------------------------------
    g = Gen("gelu")
    add("gelu", "gelu", [g.randn(100003, scale=3.0)], [],
        lambda x: F.gelu(x), POINTWISE)
    g = Gen("gelu_tanh")
    add("gelu_tanh", "gelu_tanh", [g.randn(100003, scale=3.0)], [],
        lambda x: F.gelu(x, approximate="tanh"), POINTWISE)

    # --- matmul / linear ---------------------------------------------------
    g = Gen("matmul_bcast")
    add("matmul_bcast", "matmul", [g.randn(2, 1, 5, 7), g.randn(3, 7, 4)], [],
        torch.matmul, CONTRACT, note="[2,1,5,7] @ [3,7,4]")
    g = Gen("matmul_big")
    add("matmul_big", "matmul", [g.randn(96, 300), g.randn(300, 130)], [],
        torch.matmul, (3e-4, 1e-5), note="K=300, |ref| up to ~70")
    g = Gen("matmul_1d_left")
    add("matmul_1d_left", "matmul", [g.randn(7), g.randn(2, 7, 3)], [],
        torch.matmul, CONTRACT)
    g = Gen("matmul_1d_right")
    add("matmul_1d_right", "matmul", [g.randn(3, 5, 7), g.randn(7)], [],
        torch.matmul, CONTRACT)
    g = Gen("matmul_dot")
    add("matmul_dot", "matmul", [g.randn(50), g.randn(50)], [],
        torch.matmul, CONTRACT)
    g = Gen("matmul_tb")
    add("matmul_tb", "matmul_tb", [g.randn(2, 33, 64), g.randn(2, 47, 64)], [],
        lambda a, b: a @ b.transpose(-1, -2), CONTRACT, note="b^T as a strided view")
    g = Gen("linear")
    add("linear", "linear", [g.randn(5, 3, 40), g.randn(24, 40), g.randn(24)], [],
        F.linear, CONTRACT)

    # --- conv2d ----------------------------------------------------------------
    g = Gen("conv2d_groups")
    add("conv2d_groups", "conv2d", [g.randn(2, 4, 9, 11), g.randn(6, 2, 3, 3), g.randn(6)],
        [2, 1, 1, 2, 1, 1, 2],
        lambda x, w, b: F.conv2d(x, w, b, stride=(2, 1), padding=(1, 2), groups=2),
        CONTRACT, note="stride (2,1) pad (1,2) groups 2")
    g = Gen("conv2d_dilated")
    add("conv2d_dilated", "conv2d", [g.randn(1, 3, 12, 10), g.randn(5, 3, 3, 2), None],
        [1, 2, 2, 0, 2, 3, 1],
        lambda x, w: F.conv2d(x, w, None, stride=(1, 2), padding=(2, 0), dilation=(2, 3)),
        CONTRACT, note="stride (1,2) pad (2,0) dilation (2,3)")
    g = Gen("conv2d_depthwise_chw")
    add("conv2d_depthwise_chw", "conv2d", [g.randn(8, 7, 7), g.randn(8, 1, 5, 5), g.randn(8)],
        [1, 1, 2, 2, 1, 1, 8],
        lambda x, w, b: F.conv2d(x.unsqueeze(0), w, b, padding=2, groups=8).squeeze(0),
        CONTRACT, note="3-D CHW input, depthwise")
    g = Gen("conv2d_big")
    add("conv2d_big", "conv2d",
        [g.randn(2, 16, 32, 32), g.randn(32, 16, 3, 3, scale=0.1), g.randn(32)],
        [1, 1, 1, 1, 1, 1, 1],
        lambda x, w, b: F.conv2d(x, w, b, padding=1), CONTRACT)

    # --- pooling -------------------------------------------------------------
    g = Gen("max_pool2d_ceil")
    add("max_pool2d_ceil", "max_pool2d", [g.randn(2, 3, 10, 9)],
        pool_params((3, 3), (2, 2), (1, 1), ceil=1),
        lambda x: F.max_pool2d(x, 3, 2, 1, ceil_mode=True), EXACT)
    g = Gen("max_pool2d_dilated")
    add("max_pool2d_dilated", "max_pool2d", [g.randn(1, 2, 11, 11)],
        pool_params((2, 3), (1, 2), (1, 1), d=(2, 2)),
        lambda x: F.max_pool2d(x, (2, 3), (1, 2), (1, 1), dilation=(2, 2)), EXACT)
    g = Gen("avg_pool2d_ceil")
    add("avg_pool2d_ceil", "avg_pool2d", [g.randn(2, 3, 10, 9)],
        pool_params((3, 3), (2, 2), (1, 1), ceil=1),
        lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True), POINTWISE,
        note="count_include_pad=True")
    g = Gen("avg_pool2d_ceil_excl")
    add("avg_pool2d_ceil_excl", "avg_pool2d", [g.randn(2, 3, 10, 9)],
        pool_params((3, 3), (2, 2), (1, 1), ceil=1, exclude_pad=1),
        lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False),
        POINTWISE, note="count_include_pad=False")
    g = Gen("avg_pool2d_ceil_nopad")
    add("avg_pool2d_ceil_nopad", "avg_pool2d", [g.randn(1, 2, 7, 8)],
        pool_params((3, 3), (2, 2), (0, 0), ceil=1),
        lambda x: F.avg_pool2d(x, 3, 2, 0, ceil_mode=True), POINTWISE,
        note="last window hangs off the edge")
    g = Gen("adaptive_avg_pool2d")
    add("adaptive_avg_pool2d", "adaptive_avg_pool2d", [g.randn(2, 3, 10, 7)], [3, 4],
        lambda x: F.adaptive_avg_pool2d(x, (3, 4)), POINTWISE, note="10x7 -> 3x4")
    g = Gen("adaptive_avg_pool2d_up")
    add("adaptive_avg_pool2d_up", "adaptive_avg_pool2d", [g.randn(1, 2, 5, 5)], [7, 3],
        lambda x: F.adaptive_avg_pool2d(x, (7, 3)), POINTWISE, note="5x5 -> 7x3")

    # --- attention -----------------------------------------------------------
    g = Gen("sdpa_causal")
    add("sdpa_causal", "sdpa",
        [g.randn(2, 3, 6, 8), g.randn(2, 3, 6, 8), g.randn(2, 3, 6, 5), None], [1, 0.0],
        lambda q, k, v: sdpa_ref(q, k, v, None, True), CONTRACT, note="Ev != E")
    g = Gen("sdpa_causal_rect")
    add("sdpa_causal_rect", "sdpa",
        [g.randn(1, 2, 4, 8), g.randn(1, 2, 7, 8), g.randn(1, 2, 7, 8), None], [1, 0.0],
        lambda q, k, v: sdpa_ref(q, k, v, None, True), CONTRACT,
        note="L=4 < S=7: top-left aligned")
    g = Gen("sdpa_float_mask")
    add("sdpa_float_mask", "sdpa",
        [g.randn(2, 3, 5, 16), g.randn(1, 3, 9, 16), g.randn(2, 1, 9, 4), g.randn(5, 9)],
        [0, 0.3],
        lambda q, k, v, m: sdpa_ref(q, k, v, m, False, 0.3), CONTRACT,
        note="batch dims and mask broadcast, scale 0.3")
    g = Gen("sdpa_causal_and_mask")
    add("sdpa_causal_and_mask", "sdpa",
        [g.randn(2, 8, 16), g.randn(2, 8, 16), g.randn(2, 8, 16), g.randn(8, 8)], [1, 0.0],
        lambda q, k, v, m: sdpa_ref(q, k, v, m, True), CONTRACT, raises="TC_ERR_INVALID_ARG",
        note="a mask and is_causal together: an error, as in torch 2.x")
    g = Gen("sdpa_bool_mask_row")
    bm = g.rand(4, 6) > 0.4
    bm[:, 0] = True
    bm[2, :] = False          # every key masked: a NaN row, as in PyTorch
    add("sdpa_bool_mask_row", "sdpa",
        [g.randn(1, 4, 8), g.randn(1, 6, 8), g.randn(1, 6, 8), bm], [0, 0.0],
        lambda q, k, v, m: sdpa_ref(q, k, v, m, False), CONTRACT,
        note="bool mask, row 2 fully masked -> NaN")

    # --- reductions ------------------------------------------------------------
    g = Gen("var_axes")
    add("var_axes", "var", [g.randn(4, 5, 6, scale=2.0, offset=1.0)], [2, 0, 2, 1, 1],
        lambda x: torch.var(x, dim=(0, 2), unbiased=True, keepdim=True), REDUCE)
    g = Gen("var_all_pop")
    add("var_all_pop", "var", [g.randn(3, 1000, offset=50.0)], [0, 0, 0],
        lambda x: torch.var(x, unbiased=False), REDUCE, note="mean 50")
    g = Gen("sum_long")
    add("sum_long", "sum", [g.randn(200000)], [0, 0], lambda x: x.sum(), (1e-4, 1e-6),
        note="one long row: split into chunks")
    g = Gen("sum_long_i32")
    add("sum_long_i32", "sum", [g.randint(-1000, 1000, 2, 100000)], [1, 1, 1],
        lambda x: x.sum(dim=1, keepdim=True), EXACT, dtype="i32")
    g = Gen("mean_axes")
    add("mean_axes", "mean", [g.randn(6, 7, 8, 9, offset=2.0)], [3, 0, 2, 3, 0],
        lambda x: x.mean(dim=(0, 2, 3)), REDUCE)
    g = Gen("mean_i32")
    add("mean_i32", "mean", [g.randint(-9, 9, 5, 7)], [1, 0, 1],
        lambda x: x.double().mean(dim=0, keepdim=True), REDUCE, note="i32 -> f32")
    g = Gen("argmax_dim")
    add("argmax_dim", "argmax", [g.randn(4, 5, 6)], [1, -2, 0],
        lambda x: torch.argmax(x, dim=-2), EXACT, dtype="i32")
    g = Gen("argmax_multi")
    add("argmax_multi", "argmax", [g.randn(4, 5, 6)], [2, 0, 2, 1],
        lambda x: argmax_ref(x, [0, 2], True), EXACT, dtype="i32",
        note="axes (0,2): index into the flattened reduced axes")
    g = Gen("argmax_all")
    add("argmax_all", "argmax", [g.randn(7, 9)], [0, 0],
        lambda x: torch.argmax(x), EXACT, dtype="i32")

    # --- shape / indexing ------------------------------------------------------
    g = Gen("pad")
    add("pad", "pad", [g.randn(2, 3, 4, 5)], [6, 1, 2, -1, 3, 0, 1, 0.5],
        lambda x: F.pad(x, (1, 2, -1, 3, 0, 1), value=0.5), EXACT,
        note="(1,2,-1,3,0,1): a negative crops")
    g = Gen("gather")
    add("gather", "gather", [g.randn(3, 4, 5), g.randint(0, 4, 3, 6, 5)], [1],
        lambda x, i: torch.gather(x, 1, i.long()), EXACT)
    g = Gen("gather_neg")
    add("gather_neg", "gather", [g.randn(3, 4, 5), g.randint(-4, 4, 2, 3, 5)], [1],
        lambda x, i: torch.gather(x, 1, i.long()), EXACT, raises="TC_ERR_INDEX",
        note="negative index: an error, as in torch")
    g = Gen("embedding_oob")
    add("embedding_oob", "embedding", [g.randn(10, 4), torch.tensor([[1, 10]], dtype=torch.int32)],
        [], lambda w, i: F.embedding(i.long(), w), EXACT, raises="TC_ERR_INDEX",
        note="index == V")
    g = Gen("embedding")
    add("embedding", "embedding", [g.randn(50, 16), g.randint(0, 50, 3, 7)], [],
        lambda w, i: F.embedding(i.long(), w), EXACT)
    g = Gen("batch_norm")
    add("batch_norm", "batch_norm",
        [g.randn(2, 5, 4, 3), g.randn(5), g.rand(5, lo=0.5, hi=2.0), g.randn(5), g.randn(5)],
        [1e-5],
        lambda x, m, v, w, b: F.batch_norm(x, m, v, w, b, training=False, eps=1e-5), ROW)
    g = Gen("batch_norm_plain")
    add("batch_norm_plain", "batch_norm",
        [g.randn(3, 4, 10), g.randn(4), g.rand(4, lo=0.5, hi=2.0), None, None], [1e-3],
        lambda x, m, v: F.batch_norm(x, m, v, None, None, training=False, eps=1e-3), ROW,
        note="[N,C,L], no weight/bias")

    # --- edges -------------------------------------------------------------------
    g = Gen("softmax_neginf")
    x = g.randn(5, 9)
    x[:, 3] = float("-inf")
    x[1, :4] = float("-inf")
    x[4, :] = float("-inf")    # a whole row: NaN in torch
    add("softmax_neginf", "softmax", [x], [-1], lambda x: torch.softmax(x, -1), ROW,
        note="-inf entries; row 4 all -inf -> NaN")
    g = Gen("log_softmax_neginf")
    x = g.randn(3, 6)
    x[0, 2] = float("-inf")
    add("log_softmax_neginf", "log_softmax", [x], [-1], lambda x: torch.log_softmax(x, -1),
        ROW, note="an -inf entry gives -inf")
    g = Gen("log_softmax_large")
    add("log_softmax_large", "log_softmax", [g.randn(4, 100, scale=20.0, offset=-500.0)], [-1],
        lambda x: torch.log_softmax(x, -1), (1e-4, 1e-6), note="values near -500")
    g = Gen("softmax_size1")
    add("softmax_size1", "softmax", [g.randn(3, 1, 4)], [1], lambda x: torch.softmax(x, 1), ROW)
    g = Gen("layer_norm_all")
    add("layer_norm_all", "layer_norm", [g.randn(3, 4, 5), g.randn(3, 4, 5), g.randn(3, 4, 5)],
        [3, 1e-5], lambda x, w, b: F.layer_norm(x, (3, 4, 5), w, b, 1e-5), ROW,
        note="nnorm = ndim")
    special = torch.tensor([float("inf"), float("-inf"), float("nan"), 1e30, -1e30, 3e19, -3e19,
                            0.0, -0.0, 88.0, -88.0, 10.0, -10.0, 1e-30, -1e-30, 5.5, -5.5])
    add("gelu_special", "gelu", [special], [], F.gelu, POINTWISE,
        note="inf, NaN, huge: gelu(-inf) is NaN in torch")
    add("gelu_tanh_special", "gelu_tanh", [special], [], lambda x: F.gelu(x, approximate="tanh"),
        POINTWISE)
    g = Gen("sdpa_causal_tall")
    add("sdpa_causal_tall", "sdpa",
        [g.randn(2, 7, 8), g.randn(2, 4, 8), g.randn(2, 4, 8), None], [1, 0.0],
        lambda q, k, v: sdpa_ref(q, k, v, None, True), CONTRACT, note="L=7 > S=4")
    g = Gen("sdpa_large_scores")
    add("sdpa_large_scores", "sdpa",
        [g.randn(1, 2, 9, 16, scale=30.0), g.randn(1, 2, 9, 16, scale=30.0),
         g.randn(1, 2, 9, 16), None], [0, 0.0],
        lambda q, k, v: sdpa_ref(q, k, v), (1e-4, 1e-4), note="scores ~1e3: max-subtraction")
    g = Gen("matmul_ta")
    add("matmul_ta", "matmul_ta", [g.randn(3, 40, 17), g.randn(3, 40, 9)], [],
        lambda a, b: a.transpose(-1, -2) @ b, CONTRACT, note="a^T as a strided view")
    g = Gen("matmul_expanded")
    add("matmul_expanded", "matmul_ea", [g.randn(1, 6, 11), g.randn(4, 11, 5)], [3, 4, 6, 11],
        lambda a, b: a.expand(4, 6, 11) @ b, CONTRACT, note="a expanded: batch stride 0")
    g = Gen("matmul_2d_by_4d")
    add("matmul_2d_by_4d", "matmul", [g.randn(5, 7), g.randn(2, 3, 7, 4)], [],
        torch.matmul, CONTRACT)
    g = Gen("matmul_k0")
    add("matmul_k0", "matmul", [g.randn(3, 0), g.randn(0, 4)], [],
        torch.matmul, EXACT, note="K = 0 gives zeros")
    g = Gen("linear_1d_nobias")
    add("linear_1d_nobias", "linear", [g.randn(40), g.randn(24, 40), None], [],
        lambda x, w: F.linear(x, w), CONTRACT)
    g = Gen("conv2d_1x1_stride3")
    add("conv2d_1x1_stride3", "conv2d", [g.randn(2, 6, 10, 8), g.randn(8, 3, 1, 1), None],
        [3, 3, 0, 0, 1, 1, 2],
        lambda x, w: F.conv2d(x, w, None, stride=3, groups=2), CONTRACT,
        note="1x1, stride 3 > kernel, groups 2")
    g = Gen("conv2d_bigpad")
    add("conv2d_bigpad", "conv2d", [g.randn(1, 2, 3, 2), g.randn(3, 2, 2, 2), g.randn(3)],
        [1, 1, 3, 2, 1, 1, 1],
        lambda x, w, b: F.conv2d(x, w, b, padding=(3, 2)), CONTRACT,
        note="padding > kernel: border outputs are bias only")
    g = Gen("max_pool2d_negative")
    add("max_pool2d_negative", "max_pool2d", [g.randn(1, 2, 6, 6, offset=-10.0)],
        pool_params((3, 3), (2, 2), (1, 1), ceil=1),
        lambda x: F.max_pool2d(x, 3, 2, 1, ceil_mode=True), EXACT,
        note="all inputs < 0: padding must not win")
    g = Gen("max_pool2d_ceil_drop")
    add("max_pool2d_ceil_drop", "max_pool2d", [g.randn(1, 2, 5, 5)],
        pool_params((2, 2), (2, 2), (1, 1), ceil=1),
        lambda x: F.max_pool2d(x, 2, 2, 1, ceil_mode=True), EXACT,
        note="5x5 k2 s2 p1 ceil: a window starting in the padding is dropped")
    g = Gen("avg_pool2d_ceil_drop")
    add("avg_pool2d_ceil_drop", "avg_pool2d", [g.randn(1, 2, 5, 5)],
        pool_params((2, 2), (2, 2), (1, 1), ceil=1),
        lambda x: F.avg_pool2d(x, 2, 2, 1, ceil_mode=True), POINTWISE,
        note="5x5 k2 s2 p1 ceil, count_include_pad=True")
    g = Gen("avg_pool2d_default_stride")
    add("avg_pool2d_default_stride", "avg_pool2d", [g.randn(2, 3, 8, 9)],
        pool_params((2, 3), (0, 0), (0, 0)),
        lambda x: F.avg_pool2d(x, (2, 3)), POINTWISE, note="stride 0 = kernel size")
    g = Gen("global_avg_pool2d")
    add("global_avg_pool2d", "adaptive_avg_pool2d", [g.randn(2, 5, 7, 9)], [1, 1],
        lambda x: F.adaptive_avg_pool2d(x, 1), POINTWISE)
    g = Gen("var_single")
    add("var_single", "var", [g.randn(4, 1)], [1, 1, 1, 0],
        lambda x: torch.var(x, dim=1, unbiased=True), REDUCE,
        note="one element, correction 1: NaN as in torch")
    g = Gen("argmax_ties")
    add("argmax_ties", "argmax", [g.randint(0, 3, 6, 10).float()], [1, 1, 0],
        lambda x: torch.argmax(x, dim=1), EXACT, dtype="i32", note="ties: first index")
    g = Gen("argmax_nan")
    x = g.randn(4, 8)
    x[1, 5] = float("nan")
    x[3, 0] = float("nan")
    x[3, 6] = float("nan")
    add("argmax_nan", "argmax", [x], [1, 1, 0],
        lambda x: torch.argmax(x, dim=1), EXACT, dtype="i32", note="NaN wins")
    g = Gen("pad_last_only")
    add("pad_last_only", "pad", [g.randn(2, 3, 4)], [2, -1, -2, 0.0],
        lambda x: F.pad(x, (-1, -2)), EXACT, note="crop only")
    g = Gen("gather_lastdim")
    add("gather_lastdim", "gather", [g.randn(4, 6, 7), g.randint(0, 7, 2, 3, 5)], [-1],
        lambda x, i: torch.gather(x, -1, i.long()), EXACT,
        note="dim -1; index smaller than x in other dims")
    g = Gen("embedding_0d")
    add("embedding_0d", "embedding", [g.randn(10, 4), torch.tensor(7, dtype=torch.int32)], [],
        lambda w, i: F.embedding(i.long(), w), EXACT, note="0-d index -> [D]")
    g = Gen("batch_norm_2d")
    add("batch_norm_2d", "batch_norm",
        [g.randn(6, 5), g.randn(5), g.rand(5, lo=0.5, hi=2.0), g.randn(5), None], [1e-5],
        lambda x, m, v, w: F.batch_norm(x, m, v, w, None, training=False, eps=1e-5), ROW,
        note="[N,C], weight only")
    g = Gen("add_promote")
    add("add_promote", "add", [g.randint(-5, 5, 3, 1), g.randn(4)], [],
        lambda a, b: a + b, POINTWISE, note="i32 [3,1] + f32 [4] -> f32 [3,4]")
    g = Gen("div_int")
    add("div_int", "div", [g.randint(-50, 50, 7, 5), g.randint(1, 9, 5)], [],
        lambda a, b: a / b, POINTWISE, note="i32 / i32 is true division")

    # --- pointwise: every unary and binary op, specials included ---------------
    g = Gen("unary")
    specials = [0.0, -0.0, float("inf"), float("-inf"), float("nan"), 1e-30, -1e-30, 88.0, 89.0,
                -87.0, -104.0, -110.0, 100.0, 1000.0, 1e4, -1e4, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5]
    xs = torch.cat([torch.tensor(specials), g.randn(5000, scale=3.0)])
    pos = torch.cat([torch.tensor(specials), g.rand(5000, lo=1e-6, hi=50.0)])
    unary = [("neg", torch.neg, xs), ("abs", torch.abs, xs), ("exp", torch.exp, xs),
             ("log", torch.log, pos), ("sqrt", torch.sqrt, pos), ("rsqrt", torch.rsqrt, pos),
             ("reciprocal", torch.reciprocal, xs), ("square", torch.square, xs),
             ("sin", torch.sin, xs), ("cos", torch.cos, xs), ("tanh", torch.tanh, xs),
             ("sigmoid", torch.sigmoid, xs), ("relu", torch.relu, xs), ("silu", F.silu, xs),
             ("floor", torch.floor, xs), ("ceil", torch.ceil, xs), ("hardswish", F.hardswish, xs)]
    for name, fn, x in unary:
        add("unary_" + name, name, [x], [], fn, (1e-6, 4e-6))
    ints = torch.tensor([0, 1, -1, 7, -7, 46340, 46341, 2147483647, -2147483647, -2147483648],
                        dtype=torch.int32)
    for name, fn in [("neg", torch.neg), ("abs", torch.abs), ("square", torch.square),
                     ("relu", torch.relu)]:
        add("unary_%s_i32" % name, name, [ints], [], fn, EXACT, dtype="i32",
            note="keeps i32; wraps like torch")
    g = Gen("softplus")
    add("softplus", "softplus", [torch.cat([xs, g.randn(100, scale=30.0)])], [2.0, 5.0],
        lambda x: F.softplus(x, beta=2.0, threshold=5.0), (1e-6, 4e-6), note="beta 2, threshold 5")
    add("clamp", "clamp", [xs], [-1.0, 2.5], lambda x: torch.clamp(x, -1.0, 2.5), EXACT,
        note="NaN stays NaN")
    add("clamp_crossed", "clamp", [xs], [0.5, -0.5], lambda x: torch.clamp(x, 0.5, -0.5), EXACT,
        note="lo > hi: min(max(x, lo), hi) = hi")
    g = Gen("binary")
    a = torch.cat([torch.tensor([0.0, -0.0, 1.0, -1.0, 0.0, float("nan"), 2.0, -2.0, -2.0,
                                 0.0, float("inf"), -8.0]), g.randn(300, scale=3.0)])
    b = torch.cat([torch.tensor([0.0, 0.0, -0.0, 0.0, -1.0, 1.0, float("nan"), 3.0, 0.5,
                                 0.0, 0.0, 1.0 / 3.0]), g.randn(300, scale=2.0)])
    for name, fn in [("add", torch.add), ("sub", torch.sub), ("mul", torch.mul),
                     ("div", torch.div), ("pow", torch.pow), ("maximum", torch.maximum),
                     ("minimum", torch.minimum)]:
        add("binary_" + name, name, [a, b], [], fn, (1e-6, 4e-6))
    for name, fn in [("eq", torch.eq), ("ne", torch.ne), ("lt", torch.lt), ("le", torch.le),
                     ("gt", torch.gt), ("ge", torch.ge)]:
        add("binary_" + name, name, [a, b], [], fn, EXACT, dtype="bool")
    g = Gen("binary_bcast")
    add("binary_pow_bcast", "pow", [g.rand(4, 1, 5, lo=0.1, hi=3.0), g.randn(3, 1)], [],
        torch.pow, (1e-6, 4e-6), note="[4,1,5] ** [3,1]")
    add("div_i32_by_zero", "div", [torch.tensor([5, -5, 0, 7], dtype=torch.int32),
                                   torch.tensor([0, 0, 0, 2], dtype=torch.int32)], [],
        torch.div, EXACT, note="true division: 5/0 = inf, 0/0 = NaN, as torch")
    g = Gen("where")
    add("where_bcast", "where", [g.rand(3, 1, 6) > 0.5, g.randint(-9, 9, 4, 1), g.randn(6)], [],
        torch.where, EXACT, note="bool [3,1,6], i32 [4,1], f32 [6] -> f32 [3,4,6]")
    g = Gen("max_min")
    mm = g.randn(5, 8)
    mm[2, 3] = float("nan")
    add("max_nan", "max", [mm], [1, 1, 0], lambda x: torch.amax(x, dim=1), EXACT,
        note="NaN propagates")
    add("min_nan", "min", [mm], [1, 0, 1], lambda x: torch.amin(x, dim=0, keepdim=True), EXACT)
    add("max_i32_all", "max", [g.randint(-1000, 1000, 70000)], [0, 0],
        lambda x: torch.amax(x), EXACT, dtype="i32")
    g = Gen("index_select")
    add("index_select", "index_select", [g.randn(4, 9, 3), g.randint(0, 9, 12)], [1],
        lambda x, i: torch.index_select(x, 1, i.long()), EXACT)
    add("index_select_neg", "index_select", [g.randn(4, 9, 3), torch.tensor([0, -1], dtype=torch.int32)],
        [1], lambda x, i: torch.index_select(x, 1, i.long()), EXACT, raises="TC_ERR_INDEX",
        note="negative index: an error, as in torch")
    g = Gen("concat")
    add("concat", "concat", [g.randn(2, 3, 4), g.randn(2, 1, 4), g.randn(2, 5, 4)], [1],
        lambda *xs: torch.cat(xs, 1), EXACT)
    g = Gen("chunk")
    add("chunk_uneven", "chunk_reversed", [g.randn(7, 4)], [3, 0],
        lambda x: torch.cat(list(reversed(torch.chunk(x, 3, 0))), 0), EXACT, note="3+3+1")
    add("chunk_fewer", "chunk_reversed", [g.randn(2, 6)], [4, -1],
        lambda x: torch.cat(list(reversed(torch.chunk(x, 4, -1))), -1), EXACT,
        note="6 in 4 chunks: 3 pieces of 2")

    # --- casts and scalars: rounding rules are exact ---------------------------
    g = Gen("cast_inputs")
    special = torch.tensor([0.0, -0.0, float("nan"), float("inf"), float("-inf"), 65504.0,
                            65519.99, 65520.0, 1e5, 6.1035156e-05, 6.0e-05, 2.98e-08, 2.9e-08,
                            1.0 + 2 ** -11, 1.0 + 3 * 2 ** -11, 1.0 + 2 ** -8, 1.0 + 3 * 2 ** -8,
                            3.4e38, -1e-45], dtype=torch.float32)
    wide = g.randn(4000) * torch.pow(10.0, g.rand(4000, lo=-9.0, hi=5.0))
    xs = torch.cat([special, wide])
    add("cast_f16", "cast", [xs], [1], lambda x: x.float().half(), EXACT, dtype="f16",
        note="round to nearest even, subnormals, overflow to inf")
    add("cast_bf16", "cast", [xs], [2], lambda x: x.float().bfloat16(), EXACT, dtype="bf16",
        note="round to nearest even")
    ints = torch.cat([torch.tensor([float("nan"), float("inf"), float("-inf"), 3e9, -3e9,
                                    2147483520.0, -2147483648.0, -2.5, 2.5, -0.7, 0.7, -0.0]),
                      g.randn(500, scale=1e4)])
    add("cast_i32", "cast", [ints], [3], lambda x: trunc_sat_i32(x), EXACT, dtype="i32",
        note="contract: truncate, NaN -> 0, saturate (torch differs)")
    add("cast_bool", "cast", [torch.tensor([0.0, -0.0, 1e-40, float("nan"), -3.0, float("inf")])],
        [4], lambda x: x != 0, EXACT, dtype="bool")
    g = Gen("add_scalar_i32")
    add("add_scalar_i32", "add_scalar", [g.randint(-100, 100, 6, 7)], [0.25],
        lambda a: a + 0.25, POINTWISE, note="i32 + python float -> f32")
    g = Gen("add_scalar_f16")
    add("add_scalar_f16", "add_scalar", [g.randn(5, 7).half()], [0.25],
        lambda a: a + 0.25, F16, dtype="f16", note="f16 + python float stays f16 in torch")
    g = Gen("add_scalar_bf16")
    add("add_scalar_bf16", "add_scalar", [g.randn(5, 7).bfloat16()], [-1.5],
        lambda a: a + -1.5, BF16, dtype="bf16", note="bf16 + python float stays bf16 in torch")
    g = Gen("add_bf16_rounding")
    add("add_bf16_rounding", "add", [g.randn(3000).bfloat16(), g.randn(3000).bfloat16()], [],
        lambda a, b: a + b, EXACT, dtype="bf16", note="exact sum rounded once to bf16")
    g = Gen("add_f16_rounding")
    add("add_f16_rounding", "add", [g.randn(3000).half(), g.randn(3000).half()], [],
        lambda a, b: a + b, EXACT, dtype="f16", note="exact sum rounded once to f16")
    add("add_f16_overflow", "add", [torch.tensor([60000.0, 65504.0, -60000.0, 32768.0]).half(),
                                    torch.tensor([10000.0, 16.0, -60000.0, 32752.0]).half()], [],
        lambda a, b: a + b, EXACT, dtype="f16", note="sums past 65504 -> inf")

    # --- empty and 0-d tensors ---------------------------------------------------
    add("softmax_empty", "softmax", [torch.zeros(0, 5)], [-1], lambda x: torch.softmax(x, -1),
        EXACT)
    add("softmax_0d", "softmax", [torch.tensor(3.5)], [0], lambda x: torch.softmax(x, 0), EXACT,
        note="0-d: 1.0")
    add("matmul_empty_m", "matmul", [torch.zeros(2, 0, 3), torch.ones(3, 4)], [],
        torch.matmul, EXACT)
    add("layer_norm_empty", "layer_norm", [torch.zeros(0, 8), None, None], [1, 1e-5],
        lambda x: F.layer_norm(x, (8,), None, None, 1e-5), EXACT)
    g = Gen("conv2d_empty_batch")
    add("conv2d_empty_batch", "conv2d", [torch.zeros(0, 3, 5, 5), g.randn(4, 3, 3, 3), g.randn(4)],
        [1, 1, 0, 0, 1, 1, 1], lambda x, w, b: F.conv2d(x, w, b), EXACT)
    add("var_empty", "var", [torch.zeros(3, 0)], [1, 1, 1, 0],
        lambda x: torch.var(x, dim=1), EXACT, note="empty reduction: NaN")
    add("argmax_empty", "argmax", [torch.zeros(3, 0)], [1, 1, 0],
        lambda x: torch.argmax(x, dim=1), EXACT, dtype="i32", raises="TC_ERR_SHAPE",
        note="torch raises on an empty argmax")
    add("pad_to_empty", "pad", [torch.ones(2, 3)], [2, -2, -1, 0.0],
        lambda x: F.pad(x, (-2, -1)), EXACT, note="crop everything")

    # --- strided inputs: input 0 reaches the op as a non-contiguous view ------
    g = Gen("gelu_sliced")
    add("gelu_sliced", "gelu", [g.randn(50, 701, scale=3.0)], [], F.gelu, POINTWISE, view="s",
        note="x[..., 1::2] view, NaN in between")
    g = Gen("softmax_sliced")
    add("softmax_sliced", "softmax", [g.randn(6, 50, scale=3.0)], [-1],
        lambda x: torch.softmax(x, -1), ROW, view="s")
    g = Gen("log_softmax_transposed")
    add("log_softmax_transposed", "log_softmax", [g.randn(3, 20, 30, scale=3.0)], [1],
        lambda x: torch.log_softmax(x, 1), ROW, view="t")
    g = Gen("layer_norm_transposed")
    add("layer_norm_transposed", "layer_norm", [g.randn(4, 48, 32), g.randn(32), g.randn(32)],
        [1, 1e-5], lambda x, w, b: F.layer_norm(x, (32,), w, b, 1e-5), ROW, view="t")
    g = Gen("rms_norm_sliced")
    add("rms_norm_sliced", "rms_norm", [g.randn(5, 40), g.randn(40)], [1, 1e-6],
        lambda x, w: rms_norm_ref(x, w, 1, 1e-6), ROW, view="s")
    g = Gen("matmul_sliced")
    add("matmul_sliced", "matmul", [g.randn(2, 13, 21), g.randn(21, 8)], [],
        torch.matmul, CONTRACT, view="s", note="a[..., 1::2]: inner stride 2")
    g = Gen("matmul_t_batch1")
    add("matmul_t_batch1", "matmul", [torch.arange(12.0).reshape(2, 1, 2, 3), torch.ones(3, 1)],
        [], torch.matmul, EXACT, view="t", note="[2,1,3,2]^T @ [3,1]: size-1 batch dim")
    g = Gen("matmul_t_batch1_bcast")
    add("matmul_t_batch1_bcast", "matmul", [g.randn(3, 1, 33, 20), g.randn(4, 20, 7)], [],
        torch.matmul, CONTRACT, view="t", note="[3,1,33,20]^T-view @ [4,20,7]")
    g = Gen("linear_transposed")
    add("linear_transposed", "linear", [g.randn(2, 30, 40), g.randn(16, 40), g.randn(16)], [],
        F.linear, CONTRACT, view="t")
    g = Gen("conv2d_transposed")
    add("conv2d_transposed", "conv2d", [g.randn(2, 3, 9, 8), g.randn(4, 3, 3, 3), g.randn(4)],
        [1, 1, 1, 1, 1, 1, 1], lambda x, w, b: F.conv2d(x, w, b, padding=1), CONTRACT, view="t")
    g = Gen("max_pool2d_sliced")
    add("max_pool2d_sliced", "max_pool2d", [g.randn(2, 3, 8, 9)],
        pool_params((2, 2), (2, 2), (0, 0)), lambda x: F.max_pool2d(x, 2), EXACT, view="s")
    g = Gen("avg_pool2d_transposed")
    add("avg_pool2d_transposed", "avg_pool2d", [g.randn(2, 3, 8, 9)],
        pool_params((3, 3), (2, 2), (1, 1), ceil=1),
        lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True), POINTWISE, view="t")
    g = Gen("sdpa_q_transposed")
    add("sdpa_q_transposed", "sdpa",
        [g.randn(2, 2, 7, 16), g.randn(2, 2, 9, 16), g.randn(2, 2, 9, 16), None], [1, 0.0],
        lambda q, k, v: sdpa_ref(q, k, v, None, True), CONTRACT, view="t")
    g = Gen("var_sliced")
    add("var_sliced", "var", [g.randn(6, 30, offset=3.0)], [1, -1, 1, 0],
        lambda x: torch.var(x, dim=-1, unbiased=True), REDUCE, view="s")
    g = Gen("argmax_transposed")
    add("argmax_transposed", "argmax", [g.randn(5, 7, 9)], [1, -1, 1],
        lambda x: torch.argmax(x, dim=-1, keepdim=True), EXACT, dtype="i32", view="t")
    g = Gen("pad_sliced")
    add("pad_sliced", "pad", [g.randn(3, 4, 5)], [4, 2, 1, 1, -1, -3.0],
        lambda x: F.pad(x, (2, 1, 1, -1), value=-3.0), EXACT, view="s")
    g = Gen("gather_transposed")
    add("gather_transposed", "gather", [g.randn(3, 6, 5), g.randint(0, 6, 3, 4, 5)], [1],
        lambda x, i: torch.gather(x, 1, i.long()), EXACT, view="t")
    g = Gen("batch_norm_sliced")
    add("batch_norm_sliced", "batch_norm",
        [g.randn(2, 4, 3, 5), g.randn(4), g.rand(4, lo=0.5, hi=2.0), g.randn(4), g.randn(4)],
        [1e-5], lambda x, m, v, w, b: F.batch_norm(x, m, v, w, b, False, eps=1e-5), ROW,
        view="s")
    g = Gen("add_transposed")
    add("add_transposed", "add", [g.randn(40, 30), g.randn(30)], [], torch.add, POINTWISE,
        view="t")

    # --- bigger shapes: tiling, blocking and thread splits ---------------------
    g = Gen("matmul_odd_large")
    add("matmul_odd_large", "matmul", [g.randn(3, 67, 517), g.randn(517, 131)], [],
        torch.matmul, (5e-4, 1e-5), note="K=517, odd M/N")
    g = Gen("linear_wide")
    add("linear_wide", "linear", [g.randn(130, 257), g.randn(1031, 257, scale=0.1), g.randn(1031)],
        [], F.linear, CONTRACT)
    g = Gen("softmax_long_row")
    add("softmax_long_row", "softmax", [g.randn(3, 100000, scale=5.0)], [-1],
        lambda x: torch.softmax(x, -1), (1e-7, 1e-4), note="rows of 1e5")
    g = Gen("layer_norm_long_row")
    add("layer_norm_long_row", "layer_norm", [g.randn(2, 60000, offset=5.0), None, None],
        [1, 1e-5], lambda x: F.layer_norm(x, (60000,), None, None, 1e-5), ROW)
    g = Gen("var_large")
    add("var_large", "var", [g.randn(1000, 1000, scale=2.0, offset=100.0)], [0, 1, 0],
        lambda x: torch.var(x), (1e-5, 1e-4), note="1e6 elements, mean 100")
    g = Gen("argmax_large")
    add("argmax_large", "argmax", [g.randn(4, 70000)], [1, 1, 0],
        lambda x: torch.argmax(x, dim=1), EXACT, dtype="i32")
    g = Gen("conv2d_resnet")
    add("conv2d_resnet", "conv2d",
        [g.randn(2, 32, 28, 28), g.randn(64, 32, 3, 3, scale=0.1), g.randn(64)],
        [2, 2, 1, 1, 1, 1, 1], lambda x, w, b: F.conv2d(x, w, b, stride=2, padding=1),
        CONTRACT, note="3x3 s2, 32->64")
    g = Gen("sdpa_long")
    add("sdpa_long", "sdpa",
        [g.randn(2, 4, 200, 64), g.randn(2, 4, 300, 64), g.randn(2, 4, 300, 64), None], [1, 0.0],
        lambda q, k, v: sdpa_ref(q, k, v, None, True), CONTRACT, note="L=200, S=300, causal")
    g = Gen("sdpa_long_mask")
    m = g.randn(1, 150, 257)
    m[..., 100:] = float("-inf")
    add("sdpa_long_mask", "sdpa",
        [g.randn(3, 150, 32, scale=2.0), g.randn(3, 257, 32, scale=2.0), g.randn(3, 257, 48), m],
        [0, 0.0], lambda q, k, v, m: sdpa_ref(q, k, v, m, False), CONTRACT,
        note="S=257, float mask with -inf tail")

    # --- half-precision storage: computed in f32, rounded back ----------------
    g = Gen("gelu_f16")
    add("gelu_f16", "gelu", [g.randn(4099, scale=3.0).half()], [], F.gelu, F16, dtype="f16")
    g = Gen("softmax_bf16")
    add("softmax_bf16", "softmax", [g.randn(16, 77, scale=3.0).bfloat16()], [-1],
        lambda x: torch.softmax(x, -1), BF16, dtype="bf16")
    g = Gen("layer_norm_f16")
    add("layer_norm_f16", "layer_norm",
        [g.randn(8, 64).half(), g.randn(64).half(), g.randn(64).half()], [1, 1e-5],
        lambda x, w, b: F.layer_norm(x, (64,), w, b, 1e-5), F16, dtype="f16")
    g = Gen("matmul_f16")
    add("matmul_f16", "matmul", [g.randn(2, 9, 33).half(), g.randn(33, 10).half()], [],
        torch.matmul, F16, dtype="f16")
    g = Gen("add_f16_bf16")
    add("add_f16_bf16", "add", [g.randn(5, 6).half(), g.randn(6).bfloat16()], [],
        lambda a, b: a + b, POINTWISE, note="f16 + bf16 -> f32")
    g = Gen("add_f16_f32_scalar")
    add("add_f16_f32_scalar", "add", [g.randn(5, 6).half(), torch.tensor(0.1)], [],
        lambda a, b: a + b, F16, dtype="f16",
        note="a 0-d f32 does not promote f16 (same category)")

    # --- a whole GPT-2 block ---------------------------------------------------
    g = Gen("gpt2_block")
    B, T, C, H = 2, 16, 64, 4
    std = 0.1
    block_in = [
        g.randn(B, T, C),
        g.randn(C, scale=0.1, offset=1.0), g.randn(C, scale=0.1),        # ln_1
        g.randn(3 * C, C, scale=std), g.randn(3 * C, scale=0.02),        # c_attn
        g.randn(C, C, scale=std), g.randn(C, scale=0.02),                # c_proj
        g.randn(C, scale=0.1, offset=1.0), g.randn(C, scale=0.1),        # ln_2
        g.randn(4 * C, C, scale=std), g.randn(4 * C, scale=0.02),        # c_fc
        g.randn(C, 4 * C, scale=std), g.randn(C, scale=0.02),            # c_proj (mlp)
    ]
    add("gpt2_block", "gpt2_block", block_in, [H],
        lambda *a: gpt2_block_ref(*a, n_head=H), CONTRACT,
        note="pre-LN, d=64, 4 heads, T=16, B=2")
    return cases


# ---------------------------------------------------------------------------
# Raw files
# ---------------------------------------------------------------------------

_CODES = {torch.float32: ("f", "f32", 4), torch.int32: ("i", "i32", 4),
          torch.bool: ("B", "bool", 1), torch.float16: ("h", "f16", 2),
          torch.bfloat16: ("h", "bf16", 2)}


def write_tensor(d, stem, t):
    code, tag, size = _CODES[t.dtype]
    flat = t.contiguous().reshape(-1)
    if size == 2:   # half types travel as their bit patterns
        flat = flat.view(torch.int16)
    a = array.array(code, flat.tolist())
    assert a.itemsize == size
    if sys.byteorder == "big":
        a.byteswap()
    with open(os.path.join(d, stem + ".bin"), "wb") as f:
        f.write(a.tobytes())
    with open(os.path.join(d, stem + ".shape"), "w") as f:
        f.write(" ".join([tag, str(t.dim())] + [str(s) for s in t.shape]) + "\n")


def read_output(d, name):
    """(tensor, dtype name) or (None, reason)."""
    base = os.path.join(d, name)
    if os.path.exists(base + ".err"):
        with open(base + ".err") as f:
            text = f.read().strip()
        code, _, msg = text.partition(" ")
        try:
            code = int(code)
            name = RESULT_NAMES[code] if 0 <= code < len(RESULT_NAMES) else str(code)
        except ValueError:
            name, msg = "?", text
        return None, ("op error", name, msg)
    if not os.path.exists(base + ".out.shape"):
        return None, "no output"
    with open(base + ".out.shape") as f:
        fields = f.read().split()
    tag, ndim = fields[0], int(fields[1])
    shape = [int(s) for s in fields[2:2 + ndim]]
    dtname = fields[2 + ndim] if len(fields) > 2 + ndim else tag
    a = array.array("f" if tag == "f32" else "i")
    with open(base + ".out.bin", "rb") as f:
        a.frombytes(f.read())
    if sys.byteorder == "big":
        a.byteswap()
    t = torch.tensor(a.tolist(), dtype=torch.float32 if tag == "f32" else torch.int64)
    return t.reshape(shape), dtname


def param_text(p):
    if isinstance(p, bool):
        return str(int(p))
    if isinstance(p, int):
        return str(p)
    return repr(float(p))


def storage_for_view(t, view):
    """What to write so that oracle_dump's view of it (see its header) equals t."""
    if view == "t":
        return t.transpose(-1, -2).contiguous()
    # "s": t lives at [..., 1::2]; the entries in between are poison, NaN for
    # floats, so a kernel that reads the wrong elements cannot go unnoticed
    poison = float("nan") if t.is_floating_point() else -(2 ** 31)
    big = torch.full(t.shape[:-1] + (2 * t.shape[-1],), poison, dtype=t.dtype)
    big[..., 1::2] = t
    return big


def write_cases(d, cases):
    with open(os.path.join(d, "cases.txt"), "w") as f:
        for c in cases:
            stems = []
            for i, t in enumerate(c.inputs):
                if t is None:
                    stems.append("NULL")
                else:
                    if i == 0 and c.view:
                        t = storage_for_view(t, c.view)
                    stem = "%s.in%d" % (c.name, i)
                    write_tensor(d, stem, t)
                    stems.append(stem)
            op = c.op + ("@" + c.view if c.view else "")
            f.write(" ".join([c.name, op] + stems + ["|"] + [param_text(p) for p in c.params]) + "\n")


def clear_outputs(d, cases):
    for c in cases:
        for ext in (".out.bin", ".out.shape", ".err", ".leak"):
            p = os.path.join(d, c.name + ext)
            if os.path.exists(p):
                os.remove(p)


# ---------------------------------------------------------------------------
# Comparison
# ---------------------------------------------------------------------------

def reference(c, dtype):
    """The case's reference computed in dtype from the (exact) inputs; a
    half-precision result is rounded to its dtype, as the contract says."""
    args = [None if t is None else (t.to(dtype) if t.is_floating_point() else t)
            for t in c.inputs]
    args = [a for a in args if a is not None]   # NULL inputs are absent in the ref
    with torch.no_grad():
        r = c.ref(*args)
    if c.dtype in HALF:
        r = r.to(HALF[c.dtype]).to(dtype)
    elif c.dtype == "f32" and r.is_floating_point():
        r = r.to(torch.float32).to(dtype)   # the best f32 answer; overflow -> inf
    return r


def measure(out, ref, atol, rtol):
    """(ok, max_abs, max_rel, detail) comparing out with ref elementwise."""
    out = out.to(torch.float64)
    ref = ref.to(torch.float64)
    if tuple(out.shape) != tuple(ref.shape):
        return False, math.inf, math.inf, "shape %s, want %s" % (list(out.shape), list(ref.shape))
    nan_o, nan_r = torch.isnan(out), torch.isnan(ref)
    if not torch.equal(nan_o, nan_r):
        return False, math.inf, math.inf, "NaN at %d positions, want %d" % (
            int(nan_o.sum()), int(nan_r.sum()))
    inf_r = torch.isinf(ref)
    if not torch.equal(out[inf_r], ref[inf_r]):
        return False, math.inf, math.inf, "inf mismatch"
    fin = ~nan_r & ~inf_r
    if torch.isinf(out[fin]).any():
        return False, math.inf, math.inf, "inf where the reference is finite"
    if not fin.any():
        return True, 0.0, 0.0, ""
    zero = torch.zeros((), dtype=torch.float64)
    d = torch.where(fin, (out - ref).abs(), zero)
    r = torch.where(fin, ref.abs(), zero)
    max_abs = float(d.max())
    big = r > max(atol, 1e-30)
    max_rel = float((d[big] / r[big]).max()) if big.any() else 0.0
    bad = d > atol + rtol * r
    if bad.any():
        i = int(torch.nonzero(bad.reshape(-1))[0])
        detail = "%d of %d elements out of tolerance; first at flat index %d: got %.9g, want %.9g" % (
            int(bad.sum()), d.numel(), i, float(out.reshape(-1)[i]), float(ref.reshape(-1)[i]))
        return False, max_abs, max_rel, detail
    return True, max_abs, max_rel, ""


# ---------------------------------------------------------------------------
# Driver
# ---------------------------------------------------------------------------

def build_dump(tmp):
    exe = os.path.join(tmp, "oracle_dump")
    cc = os.environ.get("CC", "gcc")
    cmd = [cc, "-std=c99", "-O2", "-Wall", "-Wextra", "-Werror", "-pedantic", "-I.",
           "tests/oracle_dump.c", "-o", exe, "-lm", "-lpthread"]
    r = subprocess.run(cmd, cwd=ROOT)
    return exe if r.returncode == 0 else None


def run_dump(exe, d, cases, threads):
    """Runs the C program over every case.  When it dies (a crash is a
    library bug too), the case it died on is recorded and the rest rerun."""
    crashed, reported = {}, "?"
    todo = list(cases)
    while todo:
        write_cases_list(d, todo)
        try:
            r = subprocess.run([exe, d, str(threads)], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, timeout=600)
            rc, err = r.returncode, r.stderr.decode(errors="replace").strip()
            first = r.stdout.decode(errors="replace").split("\n")[0].split()
            if reported == "?" and len(first) == 2 and first[0] == "threads":
                reported = first[1]
        except subprocess.TimeoutExpired:
            rc, err = "timeout", ""
        if rc == 0:
            break
        done = [os.path.exists(os.path.join(d, c.name + ".out.shape")) or
                os.path.exists(os.path.join(d, c.name + ".err")) for c in todo]
        if all(done):   # a harness fault reported on stderr, not a crash
            if err:
                print("oracle_dump (threads %d): %s" % (threads, err))
            break
        k = done.index(False)
        why = "oracle_dump died (%s) on this case" % (
            "signal %d" % -rc if isinstance(rc, int) and rc < 0 else "exit %s" % rc)
        if err:
            why += ": " + err.splitlines()[-1]
        crashed[todo[k].name] = why
        todo = todo[k + 1:]
    return crashed, reported


def collect(d, cases, label, crashed, results):
    for c in cases:
        if c.name in crashed:
            results[c.name].append((label, None, crashed[c.name], None))
            continue
        out, info = read_output(d, c.name)
        leak = None
        lp = os.path.join(d, c.name + ".leak")
        if os.path.exists(lp):
            with open(lp) as f:
                leak = f.read().strip()
        results[c.name].append((label, out, info, leak))


def write_cases_list(d, cases):
    """Rewrites cases.txt for a subset (the tensor files already exist)."""
    lines = []
    with open(os.path.join(d, "all_cases.txt")) as f:
        by_name = {l.split()[0]: l for l in f if l.strip()}
    for c in cases:
        lines.append(by_name[c.name])
    with open(os.path.join(d, "cases.txt"), "w") as f:
        f.writelines(lines)


def describe_failure(info):
    if isinstance(info, tuple):
        return "%s %s: %s" % info
    return info


def judge_case(c, runs):
    """A numeric case: every run must match the float64 reference."""
    ref = reference(c, torch.float64)
    t32_ok, t32_abs, _, _ = measure(reference(c, torch.float32), ref, c.atol, c.rtol)
    ok, worst_abs, worst_rel, problems, outs = True, 0.0, 0.0, [], []
    for nt, out, info, leak in runs:
        if leak:
            ok = False
            problems.append("%s: scope leak: %s" % (nt, leak))
        if out is None:
            ok = False
            problems.append("%s: %s" % (nt, describe_failure(info)))
            continue
        outs.append((nt, out))
        if info != c.dtype:
            ok = False
            problems.append("%s: result dtype %s, want %s" % (nt, info, c.dtype))
        good, ma, mr, det = measure(out, ref, c.atol, c.rtol)
        worst_abs, worst_rel = max(worst_abs, ma), max(worst_rel, mr)
        if not good:
            ok = False
            problems.append("%s: %s" % (nt, det))
    # Thread counts changing the bits is allowed, but worth knowing: compare
    # each binary's runs with its first.
    first = {}
    for label, b in outs:
        build = label.rpartition("t=")[0]
        if build not in first:
            first[build] = (label, b)
            continue
        la, a = first[build]
        if a.shape == b.shape and not torch.equal(a.double().nan_to_num(), b.double().nan_to_num()):
            problems.append("note: %s and %s differ by up to %.2e" % (
                la, label, float((a.double() - b.double()).abs().nan_to_num(0).max())))
    line = "%-24s max_abs=%-9s max_rel=%-9s tol=%g+%g*|ref|  torch32 max_abs=%s%s" % (
        c.name, fmt(worst_abs) if outs else "-", fmt(worst_rel) if outs else "-",
        c.atol, c.rtol, fmt(t32_abs),
        "" if t32_ok else " (torch32 itself exceeds the tolerance!)")
    return ok, line, problems


def judge_error_case(c, runs):
    """An input torch rejects: the C op must fail with c.raises, and not crash."""
    problems = []
    try:
        reference(c, torch.float64)
        problems.append("harness: torch accepted this input; the case is wrong")
    except (RuntimeError, IndexError, ValueError):
        pass
    msg = ""
    for nt, out, info, leak in runs:
        if leak:
            problems.append("%s: scope leak: %s" % (nt, leak))
        if out is not None:
            problems.append("%s: the op succeeded; torch raises" % nt)
        elif not isinstance(info, tuple):
            problems.append("%s: %s" % (nt, info))
        elif info[1] != c.raises:
            problems.append("%s: %s, want %s (%s)" % (nt, info[1], c.raises, info[2]))
        else:
            msg = info[2]
    line = "%-24s error %s as torch: %s" % (c.name, c.raises, msg or "-")
    return not problems, line, problems


def fmt(x):
    return "inf" if x == math.inf else "%.2e" % x


def main(argv):
    keep = "--keep" in argv
    calibrate = "--calibrate" in argv
    threads = [1, 3]   # 3: uneven splits
    if "--threads" in argv:
        threads = [int(t) for t in argv[argv.index("--threads") + 1].split(",")]
    pos = [a for i, a in enumerate(argv[1:], 1)
           if not a.startswith("--") and argv[i - 1] != "--threads"]

    cases = build_cases()

    if calibrate:
        for c in cases:
            if c.raises:
                continue
            ref = reference(c, torch.float64)
            t32 = reference(c, torch.float32)
            ok, ma, mr, det = measure(t32, ref, c.atol, c.rtol)
            print("%-24s torch32 max_abs=%s max_rel=%s tol=%g+%g*|ref| %s %s" % (
                c.name, fmt(ma), fmt(mr), c.atol, c.rtol, "" if ok else "EXCEEDS", det))
        return 0

    tmp = tempfile.mkdtemp(prefix="tc_oracle_")
    try:
        exes = pos if pos else [build_dump(tmp)]
        if not all(exes):
            print("FAIL build of tests/oracle_dump.c")
            print("0 passed, 1 failed, 0 skipped")
            return 1
        exes = [os.path.abspath(e) for e in exes]
        write_cases(tmp, cases)
        shutil.copy(os.path.join(tmp, "cases.txt"), os.path.join(tmp, "all_cases.txt"))

        # per case, one (label, output | None, dtype name | why, leak) per run
        results = {c.name: [] for c in cases}
        for k, exe in enumerate(exes):
            for nt in threads:
                label = ("%s:t=%d" % (os.path.basename(exe), nt)) if k else "t=%d" % nt
                clear_outputs(tmp, cases)
                crashed, got = run_dump(exe, tmp, cases, nt)
                print("run %s: %s, context threads %s" % (label, exe, got))
                collect(tmp, cases, label, crashed, results)

        passed = failed = 0
        for c in cases:
            ok, line, problems = judge_error_case(c, results[c.name]) if c.raises \
                else judge_case(c, results[c.name])
            passed, failed = passed + ok, failed + (not ok)
            print(("PASS " if ok else "FAIL ") + line + (("  [" + c.note + "]") if c.note else ""))
            for p in problems:
                print("     " + p)
        print("%d passed, %d failed, 0 skipped" % (passed, failed))
        return 1 if failed else 0
    finally:
        if keep:
            print("kept inputs and outputs in " + tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
