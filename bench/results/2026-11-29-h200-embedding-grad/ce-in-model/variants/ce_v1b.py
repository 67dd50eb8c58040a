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
def triton_red_fused_arange_convert_element_type_div_eq_exp_expand_mul_scalar_tensor_scatter_sub_sum_view_where_0(in_ptr0, in_ptr1, in_ptr2, in_ptr3, in_ptr4, in_ptr5, in_ptr6, out_ptr1, XBLOCK: tl.constexpr, RBLOCK: tl.constexpr):
    pid = tl.program_id(0)
    xrange = tl.arange(0, 1)
    xrow = xrange + pid
    xindex = tl.expand_dims(xrow, 1)
    rnumel = 32000
    c0 = 0
    rblock = 8192
    rrange = tl.arange(0, 8192)
    load = tl.load(in_ptr0 + xindex, eviction_policy="evict_last")
    cst = -1.0
    cst_1 = 0.0
    load_1 = tl.load(in_ptr1 + xindex, eviction_policy="evict_last")
    div = in_ptr2 / in_ptr3
    where = tl.where(load_1, div, cst_1)
    hit = load == load
    where_1 = tl.where(hit, cst, cst_1)
    mul = where_1 * where
    hit_1 = load != load
    where_2 = tl.where(hit_1, cst, cst_1)
    mul_1 = where_2 * where
    n = tl.cast(32000, tl.int64)
    c0_1 = tl.cast(0, tl.int64)
    from0 = load >= c0_1
    below_n = load < n
    inside = from0 & below_n
    count = 32000.0
    others = 31999.0
    misses = mul_1 * others
    with_hit = mul + misses
    without_hit = mul_1 * count
    onehot_row = tl.where(inside, with_hit, without_hit)
    onehot_sum = tl.sum(onehot_row, 1)
    sum_row = tl.expand_dims(onehot_sum, 1)
    idx = xindex * rnumel
    load_2 = tl.load(in_ptr5 + xindex, eviction_policy="evict_last")
    load_3 = tl.load(in_ptr6 + xindex, eviction_policy="evict_last")
    rmain = 24576
    lab32 = tl.where(inside, load, -1).to(tl.int32)
    hitv = cst * where
    for roffset in range(0, 24576, 8192):
        rcol = rrange + roffset
        rindex = tl.expand_dims(rcol, 0)
        cmp = tl.expand_dims(rrange, 0) == (lab32 - roffset)
        mul_2 = tl.where(cmp, hitv, cst_1)
        bcast_2 = tl.broadcast_to(idx, [1, 8192])
        offs = bcast_2 + rindex
        load_4 = tl.load(in_ptr4 + offs, eviction_policy="evict_first")
        wide = tl.cast(load_4, tl.float32)
        bcast_3 = tl.broadcast_to(load_2, [1, 8192])
        sub = wide - bcast_3
        bcast_4 = tl.broadcast_to(load_3, [1, 8192])
        sub_1 = sub - bcast_4
        exp = tl.inline_asm_elementwise("ex2.approx.ftz.f32 $0, $1;", "=f,f", [sub_1 * 1.4426950408889634], dtype=tl.float32, is_pure=True, pack=1)
        bcast_5 = tl.broadcast_to(sum_row, [1, 8192])
        mul_3 = exp * bcast_5
        sub_2 = mul_2 - mul_3
        cast_1 = _tilec_bf16(sub_2)
        tl.store(out_ptr1 + offs, cast_1)
    rcol_1 = rrange + rmain
    rindex_1 = tl.expand_dims(rcol_1, 0)
    rmask = rindex_1 < rnumel
    cast_2 = tl.cast(rindex_1, tl.int64)
    bcast_6 = tl.broadcast_to(load, [1, 8192])
    cmp_1 = bcast_6 == cast_2
    where_4 = tl.where(cmp_1, cst, cst_1)
    bcast_7 = tl.broadcast_to(where, [1, 8192])
    mul_4 = where_4 * bcast_7
    bcast_8 = tl.broadcast_to(idx, [1, 8192])
    offs_1 = bcast_8 + rindex_1
    load_5 = tl.load(in_ptr4 + offs_1, mask=rmask, other=0, eviction_policy="evict_first")
    wide_1 = tl.cast(load_5, tl.float32)
    bcast_9 = tl.broadcast_to(load_2, [1, 8192])
    sub_3 = wide_1 - bcast_9
    bcast_10 = tl.broadcast_to(load_3, [1, 8192])
    sub_4 = sub_3 - bcast_10
    exp_1 = tl.exp(sub_4)
    bcast_11 = tl.broadcast_to(sum_row, [1, 8192])
    mul_5 = exp_1 * bcast_11
    sub_5 = mul_4 - mul_5
    cast_3 = _tilec_bf16(sub_5)
    tl.store(out_ptr1 + offs_1, cast_3, mask=rmask)


KERNEL = triton_red_fused_arange_convert_element_type_div_eq_exp_expand_mul_scalar_tensor_scatter_sub_sum_view_where_0
SIGNATURE = {"in_ptr0": "*i64", "in_ptr1": "*i1", "in_ptr2": "fp32", "in_ptr3": "fp32", "in_ptr4": "*bf16", "in_ptr5": "*fp32", "in_ptr6": "*fp32", "out_ptr1": "*bf16", "XBLOCK": "constexpr", "RBLOCK": "constexpr"}
CONSTEXPRS = {'XBLOCK': 1, 'RBLOCK': 8192}
DIVISIBLE = ['in_ptr0', 'in_ptr1', 'in_ptr4', 'in_ptr5', 'in_ptr6', 'out_ptr1']
NUM_WARPS = 16


def GRID(in_ptr0, in_ptr1, in_ptr2, in_ptr3, in_ptr4, in_ptr5, in_ptr6, out_ptr1, num_sms=1):  # noqa: N802
    return (4096,)


def launch_args(in_ptr0, in_ptr1, in_ptr2, in_ptr3, in_ptr4, in_ptr5, in_ptr6, out_ptr1, num_sms=1):
    return GRID(in_ptr0, in_ptr1, in_ptr2, in_ptr3, in_ptr4, in_ptr5, in_ptr6, out_ptr1, num_sms=num_sms), (in_ptr0, in_ptr1, in_ptr2, in_ptr3, in_ptr4, in_ptr5, in_ptr6, out_ptr1, 1, 8192,)


def launch(in_ptr0, in_ptr1, in_ptr2, in_ptr3, in_ptr4, in_ptr5, in_ptr6, out_ptr1, num_sms=1):
    grid, args = launch_args(in_ptr0, in_ptr1, in_ptr2, in_ptr3, in_ptr4, in_ptr5, in_ptr6, out_ptr1, num_sms=num_sms)
    return triton_red_fused_arange_convert_element_type_div_eq_exp_expand_mul_scalar_tensor_scatter_sub_sum_view_where_0[grid](*args, num_warps=16)


def compile_only(in_ptr0, in_ptr1, in_ptr2, in_ptr3, in_ptr4, in_ptr5, in_ptr6, out_ptr1, num_sms=1):
    grid, args = launch_args(in_ptr0, in_ptr1, in_ptr2, in_ptr3, in_ptr4, in_ptr5, in_ptr6, out_ptr1, num_sms=num_sms)
    return triton_red_fused_arange_convert_element_type_div_eq_exp_expand_mul_scalar_tensor_scatter_sub_sum_view_where_0.warmup(*args, grid=grid, num_warps=16)

