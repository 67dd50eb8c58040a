# AOT ID: ['1_backward']
from ctypes import c_void_p, c_long, c_int
import torch
import math
import random
import os
import tempfile
from math import inf, nan
from cmath import nanj
from torch._inductor.hooks import run_intermediate_hooks
from torch._inductor.utils import maybe_profile
from torch._inductor.codegen.memory_planning import _align as align
from torch import device, empty_strided
from torch._inductor.async_compile import AsyncCompile
from torch._inductor.select_algorithm import extern_kernels
import triton
import triton.language as tl
from torch._inductor.runtime.triton_heuristics import start_graph, end_graph
from torch._C import _cuda_getCurrentRawStream as get_raw_stream

aten = torch.ops.aten
inductor_ops = torch.ops.inductor
_quantized = torch.ops._quantized
assert_size_stride = torch._C._dynamo.guards.assert_size_stride
assert_alignment = torch._C._dynamo.guards.assert_alignment
empty_strided_cpu = torch._C._dynamo.guards._empty_strided_cpu
empty_strided_cpu_pinned = torch._C._dynamo.guards._empty_strided_cpu_pinned
empty_strided_cuda = torch._C._dynamo.guards._empty_strided_cuda
empty_strided_xpu = torch._C._dynamo.guards._empty_strided_xpu
empty_strided_mtia = torch._C._dynamo.guards._empty_strided_mtia
reinterpret_tensor = torch._C._dynamo.guards._reinterpret_tensor
alloc_from_pool = torch.ops.inductor._alloc_from_pool
async_compile = AsyncCompile()
empty_strided_p2p = torch._C._distributed_c10d._SymmetricMemory.empty_strided_p2p
__import__("tilec.inductor.report", fromlist=["replay"]).replay('eef072d325e449f98d576141487f0bd2', 0, kernel='triton_per_fused_native_layer_norm_native_layer_norm_backward_0', taken=True, emitter='triton', pipeline='repeats,onehot-sums,band-chunks{chunk=8192,column_elems=16384},plan{max_rblock=16384,chunk=8192,in_flight=70427},accumulate,align-rows{narrow=true,line=128},canonicalize,peel,canonicalize,welford-lanes,cse,reuse{cache=registers},softmax-lanes,softmax-groups,reread,fp32-at-use,dce', reason=None, device='cuda', autotune=None, remarks=('repeats: not a pointwise kernel', 'onehot-sums: its block sizes are bound already (the pass runs on the logical form)', 'band-chunks: its row of 2048 elements is one chunk of 8192', "align-rows: more than one row per program: a program's rows start at different offsets", 'peel: no loop peeled: %xoffset: its bounds or step are not constants', 'canonicalize: nothing to fold, inline or simplify', 'welford-lanes: no loop or unrolled chain carries Welford statistics of chunks', 'softmax-lanes: no chain of softmax statistics of chunks, unrolled or through loops', 'softmax-groups: the plan does not ask for it (its `groups`)', 'reread: the plan asks for neither (its `reverse` and `stream`)'), signature=('mix-order', 2, 2, 32768, 2048, 2), timings=(), traced=None)
__import__("tilec.inductor.report", fromlist=["replay"]).replay('eef072d325e449f98d576141487f0bd2', 1, kernel='triton_poi_fused_native_layer_norm_backward_2', taken=False, emitter=None, pipeline=None, reason='stock Inductor measured faster for pointwise kernels (bench/results/2026-11-26-h200-model-kernels: 8388608x1 40.9 vs 33.8 us; 8388608x1 56.2 vs 46.9 us; 8388608x1 49.6 vs 42.9 us; 33554432x1 45.5 vs 40.5 us)', device='cuda', autotune=None, remarks=(), signature=('pointwise', 0, 4, 2048, None, 0), timings=(), traced=None)
__import__("tilec.inductor.report", fromlist=["replay"]).replay('eef072d325e449f98d576141487f0bd2', 2, kernel='triton_poi_fused_native_layer_norm_backward_2', taken=False, emitter=None, pipeline=None, reason='stock Inductor measured faster for pointwise kernels (bench/results/2026-11-26-h200-model-kernels: 8388608x1 40.9 vs 33.8 us; 8388608x1 56.2 vs 46.9 us; 8388608x1 49.6 vs 42.9 us; 33554432x1 45.5 vs 40.5 us)', device='cuda', autotune=None, remarks=(), signature=('pointwise', 0, 4, 2048, None, 0), timings=(), traced=None)


# Topologically Sorted Source Nodes: [convert_element_type_2, convert_element_type_4, mul_3, mul_4, sum_1, layer_norm, mul_5, sum_2, mul_6, sub_2, sub_3, div, mul_7, mul_8, sum_3, sum_4, convert_element_type_6], Original ATen: [aten.native_layer_norm_backward, aten.native_layer_norm]
# Source node to ATen node mapping:
#   convert_element_type_2 => convert_element_type_2
#   convert_element_type_4 => convert_element_type_4
#   convert_element_type_6 => convert_element_type_6
#   div => div
#   layer_norm => convert_element_type, mul, sub
#   mul_3 => mul_3
#   mul_4 => mul_4
#   mul_5 => mul_5
#   mul_6 => mul_6
#   mul_7 => mul_7
#   mul_8 => mul_8
#   sub_2 => sub_2
#   sub_3 => sub_3
#   sum_1 => sum_1
#   sum_2 => sum_2
#   sum_3 => sum_3
#   sum_4 => sum_4
# Graph fragment:
#   %tangents_1 : Tensor "bf16[32768, 2048][2048, 1]cuda:0" = PlaceHolder[target=tangents_1]
#   %primals_2 : Tensor "bf16[2048][1]cuda:0" = PlaceHolder[target=primals_2]
#   %primals_1 : Tensor "bf16[32768, 2048][2048, 1]cuda:0" = PlaceHolder[target=primals_1]
#   %getitem_1 : Tensor "f32[32768, 1][1, 1]cuda:0" = PlaceHolder[target=getitem_1]
#   %rsqrt : Tensor "f32[32768, 1][1, 1]cuda:0" = PlaceHolder[target=rsqrt]
#   %sum_1 : Tensor "f32[32768, 1][1, 32768]cuda:0" = PlaceHolder[target=sum_1]
#   %sum_2 : Tensor "f32[32768, 1][1, 32768]cuda:0" = PlaceHolder[target=sum_2]
#   %convert_element_type_2 : Tensor "f32[32768, 2048][2048, 1]cuda:0"[num_users=3] = call_function[target=torch.ops.prims.convert_element_type.default](args = (%tangents_1, torch.float32), kwargs = {})
#   %convert_element_type_4 : Tensor "f32[2048][1]cuda:0"[num_users=1] = call_function[target=torch.ops.prims.convert_element_type.default](args = (%primals_2, torch.float32), kwargs = {})
#   %mul_3 : Tensor "f32[32768, 2048][2048, 1]cuda:0"[num_users=3] = call_function[target=torch.ops.aten.mul.Tensor](args = (%convert_element_type_2, %convert_element_type_4), kwargs = {})
#   %mul_4 : Tensor "f32[32768, 2048][2048, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%mul_3, 2048), kwargs = {})
#   %sum_1 : Tensor "f32[32768, 1][1, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.sum.dim_IntList](args = (%mul_3, [1], True), kwargs = {})
#   %convert_element_type : Tensor "f32[32768, 2048][2048, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.prims.convert_element_type.default](args = (%primals_1, torch.float32), kwargs = {})
#   %sub : Tensor "f32[32768, 2048][2048, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.sub.Tensor](args = (%convert_element_type, %getitem_1), kwargs = {})
#   %mul : Tensor "f32[32768, 2048][2048, 1]cuda:0"[num_users=3] = call_function[target=torch.ops.aten.mul.Tensor](args = (%sub, %rsqrt), kwargs = {})
#   %mul_5 : Tensor "f32[32768, 2048][2048, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%mul_3, %mul), kwargs = {})
#   %sum_2 : Tensor "f32[32768, 1][1, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.sum.dim_IntList](args = (%mul_5, [1], True), kwargs = {})
#   %mul_6 : Tensor "f32[32768, 2048][2048, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%mul, %sum_2), kwargs = {})
#   %sub_2 : Tensor "f32[32768, 2048][2048, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.sub.Tensor](args = (%mul_4, %sum_1), kwargs = {})
#   %sub_3 : Tensor "f32[32768, 2048][2048, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.sub.Tensor](args = (%sub_2, %mul_6), kwargs = {})
#   %div : Tensor "f32[32768, 1][1, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.div.Tensor](args = (%rsqrt, 2048), kwargs = {})
#   %mul_7 : Tensor "f32[32768, 2048][2048, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%div, %sub_3), kwargs = {})
#   %mul_8 : Tensor "f32[32768, 2048][2048, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%convert_element_type_2, %mul), kwargs = {})
#   %sum_3 : Tensor "f32[2048][1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.sum.dim_IntList](args = (%mul_8, [0]), kwargs = {})
#   %sum_4 : Tensor "f32[2048][1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.sum.dim_IntList](args = (%convert_element_type_2, [0]), kwargs = {})
#   %convert_element_type_6 : Tensor "bf16[32768, 2048][2048, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.prims.convert_element_type.default](args = (%mul_7, torch.bfloat16), kwargs = {})
#   return %sum_1,%sum_2,%convert_element_type_6
triton_per_fused_native_layer_norm_native_layer_norm_backward_0 = __import__("tilec.runtime.launch", fromlist=["load_kernel"]).load_kernel(
    'triton_per_fused_native_layer_norm_native_layer_norm_backward_0',
    r'''
# Generated by tilec from kernel @triton_per_fused_native_layer_norm_native_layer_norm_backward_0.
import triton
import triton.language as tl


_TILEC_INTERPRETED = tl.constexpr(triton.knobs.runtime.interpret)


@triton.jit
def _tilec_bf16(x):
    # f32 -> bf16 rounding to nearest even. On a GPU the conversion instruction rounds so (the
    # integer form below cost up to a third of the bandwidth of bf16 softmax rows on the H100);
    # Triton's interpreter truncates, so there it is done in integer ops
    if _TILEC_INTERPRETED:
        bits = x.to(tl.uint32, bitcast=True)
        rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
        return tl.where(x != x, x, rounded.to(tl.float32, bitcast=True)).to(tl.bfloat16)
    else:
        return x.to(tl.bfloat16)


@triton.jit
def triton_per_fused_native_layer_norm_native_layer_norm_backward_0(in_ptr0, in_ptr1, in_ptr2, in_ptr3, in_ptr4, out_ptr2, ws_ptr, XBLOCK: tl.constexpr, RBLOCK: tl.constexpr, RSPLIT: tl.constexpr):
    pid = tl.program_id(0)  # <tilec.inductor>:2
    xnumel = 32768  # <tilec.inductor>:3
    xblock = 2  # <tilec.inductor>:4
    rsplit = 250  # <tilec.inductor>:5
    band_start = pid * rsplit  # <tilec.inductor>:6
    band_after = band_start + rsplit  # <tilec.inductor>:7
    band_end = tl.minimum(band_after, xnumel)  # <tilec.inductor>:8
    column_init = tl.full([1, 2048], 0.0, tl.float32)  # <tilec.inductor>:9
    acc_column = column_init
    acc_column_1 = column_init
    for xoffset in tl.range(band_start, band_end, 2, num_stages=6):  # <tilec.inductor>:11
        xrange = tl.arange(0, 2)  # <tilec.inductor>:12
        xrow = xrange + xoffset  # <tilec.inductor>:13
        xindex = tl.expand_dims(xrow, 1)  # <tilec.inductor>:14
        xmask = xindex < band_end  # <tilec.inductor>:15
        rnumel = 2048  # <tilec.inductor>:16
        rrange = tl.arange(0, 2048)  # <tilec.inductor>:19
        idx = xindex * rnumel  # <tilec.inductor>:21
        load = tl.load(in_ptr3 + xindex, mask=xmask, other=0, eviction_policy="evict_last")  # <tilec.inductor>:23
        load_1 = tl.load(in_ptr4 + xindex, mask=xmask, other=0, eviction_policy="evict_last")  # <tilec.inductor>:24
        rindex = tl.expand_dims(rrange, 0)  # <tilec.inductor>:28
        bcast = tl.broadcast_to(idx, [2, 2048])  # <tilec.inductor>:30
        bcast_1 = tl.broadcast_to(rindex, [2, 2048])  # <tilec.inductor>:31
        offs = bcast + bcast_1  # <tilec.inductor>:32
        bcast_2 = tl.broadcast_to(xmask, [2, 2048])  # <tilec.inductor>:33
        load_2 = tl.load(in_ptr0 + offs, mask=bcast_2, other=0)  # <tilec.inductor>:36
        wide = tl.cast(load_2, tl.float32)  # <tilec.inductor>:37
        load_3 = tl.load(in_ptr1 + rindex)  # <tilec.inductor>:38
        wide_1 = tl.cast(load_3, tl.float32)  # <tilec.inductor>:39
        bcast_4 = tl.broadcast_to(wide_1, [2, 2048])  # <tilec.inductor>:40
        mul = wide * bcast_4  # <tilec.inductor>:41
        c0 = 0.0
        kept = tl.where(bcast_2, mul, c0)
        load_4 = tl.load(in_ptr2 + offs, mask=bcast_2, other=0)  # <tilec.inductor>:44
        wide_2 = tl.cast(load_4, tl.float32)  # <tilec.inductor>:45
        bcast_5 = tl.broadcast_to(load, [2, 2048])  # <tilec.inductor>:46
        sub = wide_2 - bcast_5  # <tilec.inductor>:47
        bcast_6 = tl.broadcast_to(load_1, [2, 2048])  # <tilec.inductor>:48
        mul_1 = sub * bcast_6  # <tilec.inductor>:49
        mul_2 = mul * mul_1  # <tilec.inductor>:50
        kept_1 = tl.where(bcast_2, mul_2, c0)
        total = tl.sum(kept_1, 1)
        total_1 = tl.sum(kept, 1)
        sum_row = tl.expand_dims(total_1, 1)  # <tilec.inductor>:55
        sum_row_1 = tl.expand_dims(total, 1)  # <tilec.inductor>:56
        cst = 0.00048828125  # <tilec.inductor>:57
        mul_3 = load_1 * cst  # <tilec.inductor>:58
        cst_1 = 2048.0  # <tilec.inductor>:59
        wide_3 = tl.cast(load_2, tl.float32)  # <tilec.inductor>:71
        wide_4 = tl.cast(load_3, tl.float32)  # <tilec.inductor>:73
        bcast_11 = tl.broadcast_to(wide_4, [2, 2048])  # <tilec.inductor>:74
        mul_4 = wide_3 * bcast_11  # <tilec.inductor>:75
        mul_5 = mul_4 * cst_1  # <tilec.inductor>:76
        bcast_12 = tl.broadcast_to(sum_row, [2, 2048])  # <tilec.inductor>:77
        sub_1 = mul_5 - bcast_12  # <tilec.inductor>:78
        wide_5 = tl.cast(load_4, tl.float32)  # <tilec.inductor>:80
        sub_2 = wide_5 - bcast_5  # <tilec.inductor>:82
        mul_6 = sub_2 * bcast_6  # <tilec.inductor>:84
        bcast_15 = tl.broadcast_to(sum_row_1, [2, 2048])  # <tilec.inductor>:85
        mul_7 = mul_6 * bcast_15  # <tilec.inductor>:86
        sub_3 = sub_1 - mul_7  # <tilec.inductor>:87
        bcast_16 = tl.broadcast_to(mul_3, [2, 2048])  # <tilec.inductor>:88
        mul_8 = bcast_16 * sub_3  # <tilec.inductor>:89
        cast = _tilec_bf16(mul_8)  # <tilec.inductor>:90
        tl.store(out_ptr2 + offs, cast, mask=bcast_2)  # <tilec.inductor>:91
        wide_3_1 = tl.cast(load_2, tl.float32)
        mul_9 = wide_3_1 * mul_6  # <tilec.inductor>:92
        mul_9_masked = tl.where(bcast_2, mul_9, tl.full([2, 2048], 0.0, tl.float32))
        column_part = tl.sum(mul_9_masked, 0)  # <tilec.inductor>:93
        column_part_row = tl.expand_dims(column_part, 0)  # <tilec.inductor>:94
        acc_column_next = acc_column + column_part_row  # <tilec.inductor>:95
        wide_3_2 = tl.cast(load_2, tl.float32)
        wide_3_2_masked = tl.where(bcast_2, wide_3_2, tl.full([2, 2048], 0.0, tl.float32))
        column_part_1 = tl.sum(wide_3_2_masked, 0)  # <tilec.inductor>:96
        column_part_row_1 = tl.expand_dims(column_part_1, 0)  # <tilec.inductor>:97
        acc_column_next_1 = acc_column_1 + column_part_row_1  # <tilec.inductor>:98
        acc_column, acc_column_1 = acc_column_next, acc_column_next_1
    column = acc_column
    column_1 = acc_column_1
    programs = tl.num_programs(0)  # <tilec.inductor>:104
    column_index = tl.arange(0, 2048)  # <tilec.inductor>:105
    column_2 = tl.expand_dims(column_index, 0)  # <tilec.inductor>:106
    rnumel_1 = 2048  # <tilec.inductor>:107
    ws_base = pid * rnumel_1  # <tilec.inductor>:109
    ws_offsets = column_2 + ws_base  # <tilec.inductor>:110
    tl.store(ws_ptr + ws_offsets, column)  # <tilec.inductor>:111
    ws_row = pid + programs  # <tilec.inductor>:114
    ws_base_1 = ws_row * rnumel_1  # <tilec.inductor>:115
    ws_offsets_1 = column_2 + ws_base_1  # <tilec.inductor>:116
    tl.store(ws_ptr + ws_offsets_1, column_1)  # <tilec.inductor>:117


KERNEL = triton_per_fused_native_layer_norm_native_layer_norm_backward_0
SIGNATURE = {"in_ptr0": "*bf16", "in_ptr1": "*bf16", "in_ptr2": "*bf16", "in_ptr3": "*fp32", "in_ptr4": "*fp32", "out_ptr2": "*bf16", "ws_ptr": "*fp32", "XBLOCK": "constexpr", "RBLOCK": "constexpr", "RSPLIT": "constexpr"}
CONSTEXPRS = {'XBLOCK': 2, 'RBLOCK': 2048, 'RSPLIT': 250}
DIVISIBLE = ['in_ptr0', 'in_ptr1', 'in_ptr2', 'in_ptr3', 'in_ptr4', 'out_ptr2', 'ws_ptr']
NUM_WARPS = 8


def GRID(in_ptr0, in_ptr1, in_ptr2, in_ptr3, in_ptr4, out_ptr2, ws_ptr, num_sms=1):  # noqa: N802
    return (132,)


def launch_args(in_ptr0, in_ptr1, in_ptr2, in_ptr3, in_ptr4, out_ptr2, ws_ptr, num_sms=1):
    return GRID(in_ptr0, in_ptr1, in_ptr2, in_ptr3, in_ptr4, out_ptr2, ws_ptr, num_sms=num_sms), (in_ptr0, in_ptr1, in_ptr2, in_ptr3, in_ptr4, out_ptr2, ws_ptr, 2, 2048, 250,)


def launch(in_ptr0, in_ptr1, in_ptr2, in_ptr3, in_ptr4, out_ptr2, ws_ptr, num_sms=1):
    grid, args = launch_args(in_ptr0, in_ptr1, in_ptr2, in_ptr3, in_ptr4, out_ptr2, ws_ptr, num_sms=num_sms)
    return triton_per_fused_native_layer_norm_native_layer_norm_backward_0[grid](*args, num_warps=8)


def compile_only(in_ptr0, in_ptr1, in_ptr2, in_ptr3, in_ptr4, out_ptr2, ws_ptr, num_sms=1):
    grid, args = launch_args(in_ptr0, in_ptr1, in_ptr2, in_ptr3, in_ptr4, out_ptr2, ws_ptr, num_sms=num_sms)
    return triton_per_fused_native_layer_norm_native_layer_norm_backward_0.warmup(*args, grid=grid, num_warps=8)
''',
    'triton',
    order=[0, 1, 2, 3, 4, 5, 6],
    device='cuda',
)


# the sums of a mix-order kernel's workspace rows
tilec_workspace_sums_1 = __import__("tilec.runtime.launch", fromlist=["load_kernel"]).load_kernel(
    'tilec_workspace_sums_1',
    r'''
# Generated by tilec from kernel @tilec_workspace_sums_1.
import triton
import triton.language as tl


@triton.jit(do_not_specialize=['rows', 'cols', 'sums'])
def tilec_workspace_sums_1(ws, out, rows, cols, sums, XBLOCK: tl.constexpr, RBLOCK: tl.constexpr):
    pid = tl.program_id(0)  # <tilec.inductor>:2
    j = tl.program_id(1)  # <tilec.inductor>:3
    xblock = 64  # <tilec.inductor>:4
    cstart = pid * xblock  # <tilec.inductor>:5
    crange = tl.arange(0, 64)  # <tilec.inductor>:6
    ccol = crange + cstart  # <tilec.inductor>:7
    col = tl.expand_dims(ccol, 0)  # <tilec.inductor>:8
    cmask = col < cols  # <tilec.inductor>:9
    first = j * rows  # <tilec.inductor>:10
    zero = tl.full([32, 64], 0.0, tl.float32)  # <tilec.inductor>:11
    c0 = 0  # <tilec.inductor>:12
    rblock = 32  # <tilec.inductor>:13
    a = zero
    for r in range(0, rows, 32):  # <tilec.inductor>:14
        rrange = tl.arange(0, 32)  # <tilec.inductor>:15
        rrow = rrange + r  # <tilec.inductor>:16
        row = tl.expand_dims(rrow, 1)  # <tilec.inductor>:17
        rmask = row < rows  # <tilec.inductor>:18
        wsrow = row + first  # <tilec.inductor>:19
        base = wsrow * cols  # <tilec.inductor>:20
        bases = tl.broadcast_to(base, [32, 64])  # <tilec.inductor>:21
        cols2 = tl.broadcast_to(col, [32, 64])  # <tilec.inductor>:22
        offs = bases + cols2  # <tilec.inductor>:23
        rm = tl.broadcast_to(rmask, [32, 64])  # <tilec.inductor>:24
        cm = tl.broadcast_to(cmask, [32, 64])  # <tilec.inductor>:25
        m = rm & cm  # <tilec.inductor>:26
        v = tl.load(ws + offs, mask=m, other=0)  # <tilec.inductor>:27
        next_1 = a + v  # <tilec.inductor>:28
        a = next_1
    acc = a
    s = tl.sum(acc, 0)  # <tilec.inductor>:31
    srow = tl.expand_dims(s, 0)  # <tilec.inductor>:32
    obase = j * cols  # <tilec.inductor>:33
    ooffs = col + obase  # <tilec.inductor>:34
    tl.store(out + ooffs, srow, mask=cmask)  # <tilec.inductor>:35


KERNEL = tilec_workspace_sums_1
SIGNATURE = {"ws": "*fp32", "out": "*fp32", "rows": "i32", "cols": "i32", "sums": "i32", "XBLOCK": "constexpr", "RBLOCK": "constexpr"}
CONSTEXPRS = {'XBLOCK': 64, 'RBLOCK': 32}
DIVISIBLE = ['ws', 'out']
NUM_WARPS = 4


def GRID(ws, out, rows, cols, sums, num_sms=1):  # noqa: N802
    return ((-(-cols // 64)), sums,)


def launch_args(ws, out, rows, cols, sums, num_sms=1):
    return GRID(ws, out, rows, cols, sums, num_sms=num_sms), (ws, out, rows, cols, sums, 64, 32,)


def launch(ws, out, rows, cols, sums, num_sms=1):
    grid, args = launch_args(ws, out, rows, cols, sums, num_sms=num_sms)
    return tilec_workspace_sums_1[grid](*args, num_warps=4)


def compile_only(ws, out, rows, cols, sums, num_sms=1):
    grid, args = launch_args(ws, out, rows, cols, sums, num_sms=num_sms)
    return tilec_workspace_sums_1.warmup(*args, grid=grid, num_warps=4)
''',
    'triton',
    order=[0, 1, 2, 3, 4],
    device='cuda',
)


# kernel path: /tmp/torchinductor_root/by/cbyztwyzkmb3scxe6sbumatxsuywinu63r4wtdxwrveain2ws33q.py
# Topologically Sorted Source Nodes: [convert_element_type_7], Original ATen: [aten.native_layer_norm_backward]
# Source node to ATen node mapping:
#   convert_element_type_7 => convert_element_type_7
# Graph fragment:
#   %sum_3 : Tensor "f32[2048][1]cuda:0" = PlaceHolder[target=sum_3]
#   %convert_element_type_7 : Tensor "bf16[2048][1]cuda:0"[num_users=1] = call_function[target=torch.ops.prims.convert_element_type.default](args = (%sum_3, torch.bfloat16), kwargs = {})
#   return %convert_element_type_7
triton_poi_fused_native_layer_norm_backward_2 = async_compile.triton('triton_poi_fused_native_layer_norm_backward_2', '''
import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties
triton_helpers.set_driver_to_gpu()

@triton_heuristics.pointwise(
    size_hints={'x': 2048}, 
    filename=__file__,
    triton_meta={'signature': {'in_ptr0': '*fp32', 'out_ptr0': '*bf16', 'xnumel': 'i32', 'XBLOCK': 'constexpr'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), 'constants': {}, 'native_matmul': False, 'enable_fp_fusion': True, 'launch_pdl': False, 'disable_ftz': False, 'configs': [{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]], (2,): [['tt.divisibility', 16]]}]},
    inductor_meta={'grid_type': 'Grid1D', 'autotune_hints': set(), 'kernel_name': 'triton_poi_fused_native_layer_norm_backward_2', 'mutated_arg_names': [], 'optimize_mem': True, 'no_x_dim': False, 'atomic_add_found': False, 'num_load': 1, 'num_store': 1, 'num_reduction': 0, 'backend_hash': '91D1D1166449D9E2EB66EB9770C9E2C3B0FEB787341F27FEB4D3F0338DA50336', 'assert_indirect_indexing': True, 'autotune_local_cache': True, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': False, 'dynamic_scale_rblock': True, 'max_autotune': False, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': False, 'deterministic': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': False, 'are_deterministic_algorithms_enabled': False, 'tiling_scores': {'x': 16384}},
    min_elem_per_thread=0
)
@triton.jit
def triton_poi_fused_native_layer_norm_backward_2(in_ptr0, out_ptr0, xnumel, XBLOCK : tl.constexpr):
    xnumel = 2048
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = xindex < xnumel
    x0 = xindex
    tmp0 = tl.load(in_ptr0 + (x0), xmask)
    tmp1 = tmp0.to(tl.float32)
    tl.store(out_ptr0 + (x0), tmp1, xmask)
''', device_str='cuda')


async_compile.wait(globals())
del async_compile

class Runner:
    def __init__(self, partitions):
        self.partitions = partitions

    def recursively_apply_fns(self, fns):
        new_callables = []
        for fn, c in zip(fns, self.partitions):
            new_callables.append(fn(c))
        self.partitions = new_callables

    def call(self, args):
        primals_1, primals_2, getitem_1, rsqrt, tangents_1 = args
        args.clear()
        assert_size_stride(primals_1, (32768, 2048), (2048, 1))
        assert_size_stride(primals_2, (2048, ), (1, ))
        assert_size_stride(getitem_1, (32768, 1), (1, 1))
        assert_size_stride(rsqrt, (32768, 1), (1, 1))
        assert_size_stride(tangents_1, (32768, 2048), (2048, 1))
        with torch.cuda._DeviceGuard(0):
            torch.cuda.set_device(0)
            buf6 = empty_strided_cuda((32768, 2048), (2048, 1), torch.bfloat16)
            # Call mix order reduction kernel
            # Topologically Sorted Source Nodes: [convert_element_type_2, convert_element_type_4, mul_3, mul_4, sum_1, layer_norm, mul_5, sum_2, mul_6, sub_2, sub_3, div, mul_7, mul_8, sum_3, sum_4, convert_element_type_6], Original ATen: [aten.native_layer_norm_backward, aten.native_layer_norm]
            workspace_0 = empty_strided_cuda((540672, ), (1, ), torch.float32)
            stream0 = get_raw_stream(0)
            triton_per_fused_native_layer_norm_native_layer_norm_backward_0.run(tangents_1, primals_2, primals_1, getitem_1, rsqrt, buf6, workspace_0, 32768, 2048, stream=stream0)
            workspace_0_sums = empty_strided_cuda((2 * (2048),), (1,), torch.float32)
            stream0 = get_raw_stream(0)
            tilec_workspace_sums_1.run(workspace_0, workspace_0_sums, 132, 2048, 2, stream=stream0)
            buf3 = workspace_0_sums[0 * (2048) : 1 * (2048)]
            buf5 = workspace_0_sums[1 * (2048) : 2 * (2048)]
            del workspace_0_sums
            del workspace_0
            del getitem_1
            del primals_1
            del primals_2
            del rsqrt
            del tangents_1
            buf7 = empty_strided_cuda((2048, ), (1, ), torch.bfloat16)
            # Topologically Sorted Source Nodes: [convert_element_type_7], Original ATen: [aten.native_layer_norm_backward]
            stream0 = get_raw_stream(0)
            triton_poi_fused_native_layer_norm_backward_2.run(buf3, buf7, 2048, stream=stream0)
            del buf3
            buf8 = empty_strided_cuda((2048, ), (1, ), torch.bfloat16)
            # Topologically Sorted Source Nodes: [convert_element_type_8], Original ATen: [aten.native_layer_norm_backward]
            stream0 = get_raw_stream(0)
            triton_poi_fused_native_layer_norm_backward_2.run(buf5, buf8, 2048, stream=stream0)
            del buf5
        return (buf6, buf7, buf8, )

runner = Runner(partitions=[])
call = runner.call
recursively_apply_fns = runner.recursively_apply_fns


def get_args():
    from torch._dynamo.testing import rand_strided
    primals_1 = rand_strided((32768, 2048), (2048, 1), device='cuda:0', dtype=torch.bfloat16)
    primals_2 = rand_strided((2048, ), (1, ), device='cuda:0', dtype=torch.bfloat16)
    getitem_1 = rand_strided((32768, 1), (1, 1), device='cuda:0', dtype=torch.float32)
    rsqrt = rand_strided((32768, 1), (1, 1), device='cuda:0', dtype=torch.float32)
    tangents_1 = rand_strided((32768, 2048), (2048, 1), device='cuda:0', dtype=torch.bfloat16)
    return [primals_1, primals_2, getitem_1, rsqrt, tangents_1]


def benchmark_compiled_module(args, times=10, repeat=10):
    from torch._inductor.utils import print_performance
    fn = lambda: call(list(args))
    return print_performance(fn, times=times, repeat=repeat)


if __name__ == "__main__":
    from torch._inductor.wrapper_benchmark import compiled_module_main
    args = get_args()
    compiled_module_main('None', lambda times, repeat: benchmark_compiled_module(args, times=times, repeat=repeat))
