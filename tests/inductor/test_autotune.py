"""The autotuner's decisions, its disk cache and its random inputs, without a GPU (the timing itself
runs in tests/gpu/test_autotune_gpu.py)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

import tilec
from tilec.frontend.result import KernelArg
from tilec.inductor import autotune
from tilec.inductor.autotune import STOCK, Tuned, candidates, pick
from tilec.passes.chooser import TABLES


def test_candidates_are_the_emitters_tilec_may_use_and_stock_unless_decline_is_off() -> None:
    g = [f"gluon{{{v}}}" for v in autotune.PLAN_VARIANTS["gluon"]]
    t = [f"triton{{{v}}}" for v in autotune.PLAN_VARIANTS["triton"]]
    assert candidates(hopper=True, forced=None, decline=True) == ["gluon", *g, "triton", *t, STOCK]
    assert candidates(hopper=False, forced=None, decline=True) == ["triton", *t, STOCK]
    assert candidates(hopper=True, forced="triton", decline=True) == ["triton", *t, STOCK]
    assert candidates(hopper=True, forced="gluon", decline=False) == ["gluon", *g]
    for c in candidates(hopper=True, forced=None, decline=False):
        emitter, plan = autotune.split(c)
        assert emitter in ("gluon", "triton") and (plan == "" or plan in autotune.PLAN_VARIANTS[emitter])
    assert autotune.split("gluon{xblock=1,num_warps=4}") == ("gluon", "xblock=1,num_warps=4")
    # a pointwise kernel gets no plan variants (a one-element block is no variant of it)
    assert candidates(hopper=True, forced=None, decline=True, reduction=False) == ["gluon", "triton", STOCK]


def test_long_rows_get_their_variants() -> None:
    """Rows past one tile of the Triton plan (16384 elements) get the long-row Triton variants (one
    row a program; chunks of 8192 and 32768 over 32 warps, 16384 over 16), and on Hopper up to rows
    of 65536 the Gluon loop with the row cached (chunks of 16384 over 8 warps), past them the loop
    with its second read reversed and its stores evict-first; shorter rows, symbolic rows and
    pointwise kernels do not, a forced Gluon emitter gets only its own."""
    assert len(autotune.LONG_ROW_PLANS) == 3
    long = [f"triton{{{p}}}" for p in autotune.LONG_ROW_PLANS]
    cached = [f"gluon{{{p}}}" for p in autotune.GLUON_LONG_ROW_PLANS]
    reread = [f"triton{{{p}}}" for p in autotune.REREAD_PLANS]
    for n, has, has_cached in (
        (16384, False, False),
        (16385, True, True),
        (50257, True, True),
        (65536, True, True),
        (65537, True, False),
        (262144, True, False),
        (None, False, False),
    ):
        got = candidates(hopper=True, forced=None, decline=True, n=n)
        assert all((c in got) == has for c in long), n
        assert all((c in got) == has_cached for c in cached), n
        assert all((c in got) == (has and not has_cached) for c in reread), n
        assert not set(cached) & set(candidates(hopper=False, forced=None, decline=True, n=n))
    assert not set(long) & set(candidates(hopper=True, forced=None, decline=True, reduction=False, n=32768))
    forced = candidates(hopper=True, forced="gluon", decline=True, n=32768)
    assert not set(long) & set(forced) and set(cached) <= set(forced)


def test_rows_of_4096_to_32768_get_the_loops_that_read_the_row_again() -> None:
    """Row reductions of 2049-32768 elements get the Triton loops keeping softmax's and LayerNorm's
    statistics per lane, the chunks read again (`LANES_PLANS`: chunks of 1024 over 4 warps up to
    4096 elements, of 4096 over 8 up to 8192, of 2048 and of 8192 over 16 up to 16384, of 4096 over
    32 above), with or without Hopper; shorter and longer rows, pointwise kernels and a forced Gluon
    emitter do not."""
    lanes = {n: [f"triton{{{p}}}" for p in autotune.LANES_PLANS[n]] for n in (4096, 8192, 16384, 32768)}
    assert lanes[32768] == ["triton{xblock=1,chunk=4096,num_warps=32,lanes_reread=true}"]
    for n, expected in (
        (2048, []),
        (2049, lanes[4096]),
        (4096, lanes[4096]),
        (4097, lanes[8192]),
        (8192, lanes[8192]),
        (12000, lanes[16384]),
        (16384, lanes[16384]),
        (16385, lanes[32768]),
        (32768, lanes[32768]),
        (32769, []),
        (None, []),
    ):
        for hopper in (True, False):
            got = [c for c in candidates(hopper=hopper, forced=None, decline=True, n=n) if "lanes_reread" in c]
            assert got == expected, (n, hopper)
    assert not any(
        "lanes_reread" in c for c in candidates(hopper=True, forced=None, decline=True, reduction=False, n=8192)
    )
    assert not any("lanes_reread" in c for c in candidates(hopper=True, forced="gluon", decline=True, n=16384))


def test_long_rows_of_softmax_statistics_get_the_grouped_loops() -> None:
    """A kernel folding softmax's statistics (a cross-entropy's log-sum-exp, softmax) over rows
    past 16384 elements gets the Triton loops keeping them per group of 8 (`GROUPS_PLANS`: chunks
    of 4096 and 8192 over 8 warps), with or without Hopper; shorter rows, other reductions,
    pointwise kernels and a forced Gluon emitter do not."""
    grouped = [f"triton{{{p}}}" for p in autotune.GROUPS_PLANS]
    assert [autotune.split(c)[1] for c in grouped] == [
        "xblock=1,chunk=4096,num_warps=8,groups=8",
        "xblock=1,chunk=8192,num_warps=8,groups=8",
    ]
    for n, has in ((16384, False), (16385, True), (50257, True), (262144, True), (None, False)):
        for hopper in (True, False):
            got = candidates(hopper=hopper, forced=None, decline=True, n=n, statistics=True)
            assert [c for c in got if "groups=" in c] == (grouped if has else []), (n, hopper)
            assert not any("groups=" in c for c in candidates(hopper=hopper, forced=None, decline=True, n=n))
    assert not any(
        "groups=" in c
        for c in candidates(hopper=True, forced=None, decline=True, reduction=False, n=50257, statistics=True)
    )
    assert not any(
        "groups=" in c for c in candidates(hopper=True, forced="gluon", decline=True, n=50257, statistics=True)
    )


def test_the_grouped_loops_go_to_the_kernels_that_fold_softmax_statistics() -> None:
    """`folds_statistics` (which decides the grouped candidates) holds for the kernels of softmax
    and of a cross-entropy's log-sum-exp, not for a norm's or the loss's gather."""
    from tilec.frontend import Lowered
    from tilec.frontend.capture import capture
    from tilec.passes.softmax_groups import folds_statistics

    def loss(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.cross_entropy(x, y)

    def norm(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.rms_norm(x, (x.shape[-1],))

    def softmax(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, -1)

    x, y = torch.randn(1024, 20000, dtype=torch.bfloat16), torch.randint(0, 20000, (1024,))
    folds = {}
    for f in (loss, norm, softmax):
        for k in capture(f, [x, y], strict=False):
            if isinstance(k.result, Lowered):
                folds[k.result.kernel.name] = folds_statistics(k.result.kernel)
    assert {name for name, yes in folds.items() if yes} == {
        "triton_red_fused__log_softmax_prepare_softmax_online_0",
        "triton_red_fused__softmax_prepare_softmax_online_0",
    }, folds
    assert len(folds) > 2, folds


def test_rows_of_131072_and_more_get_the_cluster_plans_they_split_into() -> None:
    """From rows of 131072, on Hopper, the row split across a cluster in the forms the surveys
    measured best (`CLUSTER_PLANS`), each where the row splits into its CTAs and chunks with at
    most 32768 elements a CTA: all seven at 131072, the clusters of 8 and 16 at 262144, none at
    rows that do not split (150000) or are shorter, nor without Hopper; and at 131072 and 262144
    the clusters (of 2 and 4) whose CTAs hold 128 KiB slices, three quarters cached."""
    plans = {
        n: [autotune.split(c)[1] for c in candidates(hopper=True, forced=None, decline=True, n=n)]
        for n in (65536, 131072, 150000, 262144)
    }
    clustered = {n: [p for p in got if "cluster=" in p] for n, got in plans.items()}
    partly = {n: autotune.partly_cached_plan(n) for n in (131072, 262144)}
    assert partly == {
        131072: "xblock=1,chunk=8192,num_warps=16,cluster=2,row_cache=196608,exchange=push,maxnreg=64,prefetch=1",
        262144: "xblock=1,chunk=8192,num_warps=16,cluster=4,row_cache=393216,exchange=push,maxnreg=64,prefetch=1",
    }
    assert clustered[131072] == [*autotune.CLUSTER_PLANS, partly[131072]]
    assert clustered[262144] == [p for p in autotune.CLUSTER_PLANS if "cluster=4," not in p] + [partly[262144]]
    assert clustered[65536] == clustered[150000] == []
    assert not any("cluster=" in c for c in candidates(hopper=False, forced=None, decline=True, n=131072))


@pytest.mark.parametrize(
    "plan",
    sorted(
        set(autotune.GLUON_LONG_ROW_PLANS)
        | {
            r.plan
            for table in TABLES.values()
            for r in table
            # (a row split across a cluster is cluster-rows' form: tests/passes/test_cluster_rows.py)
            if r.action == "gluon" and "chunk=" in r.plan and "cluster=" not in r.plan and r.family != "mix-order"
        }
    ),
)
@pytest.mark.parametrize("name", ["rmsnorm", "layernorm", "softmax"])
def test_the_gluon_long_row_plans_compute_what_eager_does(name: str, plan: str) -> None:
    """The Gluon loop over a long row (the autotuner's candidate and the plans the chooser's rules
    set: the H200's softmax rows of 32768), the row cached in shared memory, equals eager in the
    interpreter: rows of 32768 and of 20000 (a partial last chunk), captured 512 rows at a time
    (with fewer rows Inductor splits each row over two kernels), the first programs, one in the
    middle and the last run (every program runs the same code on its rows; those rows hold the
    example's NaN and infinities)."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "passes"))
    from examples import example, kernel_count, run_interp
    from tilec.ir.ops import TmaLoadOp
    from tilec.passes.pipelines import with_plan

    for cols in (32768, 20000):
        assert kernel_count(name, 512, cols) == 1
        ex = example(name, 512, cols).with_specials()
        kernel = ex.kernel(with_plan("gluon-default", plan))
        assert any(isinstance(op, TmaLoadOp) for op in kernel.walk())
        xblock = kernel.bound_constexprs()["XBLOCK"]
        programs = sorted({0, 1, 256 // xblock, 512 // xblock - 1})
        rows = [r for p in programs for r in range(p * xblock, (p + 1) * xblock)]
        ex.check(run_interp(ex, kernel, programs=programs), f"gluon with {plan} at 512x{cols}", rows=rows)


# the long-row candidates (the grouped loops' among them) and the long-row plans of every GPU's rules
LONG_ROW_OPTIONS = sorted(
    set(autotune.LONG_ROW_PLANS)
    | set(autotune.REREAD_PLANS)
    | set(autotune.GROUPS_PLANS)
    | {r.plan for table in TABLES.values() for r in table if r.action == "triton" and "chunk=" in r.plan}
)


@pytest.mark.parametrize("option", LONG_ROW_OPTIONS)
@pytest.mark.parametrize("name", ["rmsnorm", "softmax"])
def test_the_long_row_variants_compute_what_eager_does(name: str, option: str) -> None:
    """Each long-row plan's kernel (rows of 20000, in chunks of 4096 to 32768, some with the second
    read reversed and the stores evict-first; the autotuner's candidates and the plans the
    chooser's rules set) equals eager as emitted Triton, in Triton's
    interpreter. Traced with symbolic rows (Inductor
    splits such rows unless there are a thousand of them) and run on three."""
    from tilec.emit.triton import emit_triton
    from tilec.frontend import Lowered
    from tilec.frontend.capture import capture
    from tilec.ir import parse, print_kernel
    from tilec.passes import run_pipeline
    from tilec.passes.pipelines import with_plan
    from tilec.runtime import load_source
    from tilec.testing import assert_close

    fn = {
        "rmsnorm": lambda x: (x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6)).bfloat16(),
        "softmax": lambda x: torch.softmax(x.float(), -1).bfloat16(),
    }[name]
    (k,) = capture(fn, [torch.randn(1024, 20000).bfloat16()], dynamic=True, strict=True)
    lowered = k.result
    assert isinstance(lowered, Lowered) and list(lowered.sizes) == ["xnumel"]
    module = parse(print_kernel(lowered.kernel))
    run_pipeline(module, with_plan("triton-default", option))
    kernel = module.kernels[0]
    chunk = int(option.split("chunk=")[1].split(",")[0])
    warps = int(option.split("num_warps=")[1].split(",")[0])
    assert kernel.constexprs["RBLOCK"] == chunk and kernel.launch.num_warps == warps
    # the second read turned around where the plan asks (`reverse`) and the row has two whole chunks
    turned = any(o.name == "tile.sub" and (o.result.name_hint or "").endswith("_rev") for o in kernel.walk())
    assert turned == ("reverse=true" in option and 2 * chunk <= 20000), option
    x = torch.randn(3, 20000).bfloat16()
    out = torch.full_like(x, float("nan"))
    (read,) = [a for a in lowered.args if not a.is_written]
    (written,) = [a for a in lowered.args if a.is_written]
    args = {read.param: x, written.param: out}
    load_source(emit_triton(kernel).source, interpret=True).launch(*(args[a.param] for a in lowered.args), 3)
    assert_close(out, fn(x), torch.bfloat16, what=name)


def test_a_mix_order_reduction_times_both_bands_and_stock() -> None:
    """A mix-order reduction's candidates: the banded kernel at its planned band (one program per
    SM) and at two programs per SM (rows of up to 2048: also four rows a block, over 4 warps), its Gluon ring form where Gluon can run it (Hopper, static
    sizes), and stock's kernel."""
    from tilec.ir.target import H100, H200

    assert autotune.mix_order_candidates(True, H100) == ["triton", "triton{bands=264}", STOCK]
    assert autotune.mix_order_candidates(True, H200) == ["triton", "triton{bands=264}", STOCK]
    assert autotune.mix_order_candidates(False) == ["triton", "triton{bands=264}"]
    assert autotune.mix_order_candidates(True, H100, gluon=True) == ["triton", "triton{bands=264}", "gluon", STOCK]
    for c in autotune.mix_order_candidates(True)[:2]:
        assert autotune.split(c)[0] == "triton"
    # rows of up to 2048 elements: also four rows a block and a row over 4 warps
    short = ["triton", "triton{bands=264}", "triton{xblock=4}", "triton{num_warps=4}", STOCK]
    assert autotune.mix_order_candidates(True, H200, row=2048) == short
    assert autotune.mix_order_candidates(True, H200, row=4096) == ["triton", "triton{bands=264}", STOCK]


def test_a_banded_kernel_keeps_the_bytes_in_flight_its_gpu_needs() -> None:
    """A banded kernel's stages are sized for the target's bytes in flight per SM: the H100's is
    the plan's default; the H200's 1.43x that (its stages measured faster:
    bench/results/2026-11-26-h200-inflight); a GPU whose bandwidth is not described keeps the
    default, as does a device the H200's name does not match."""
    from tilec.inductor.policy import band_options
    from tilec.ir.target import B200, H100, H200, target_for
    from tilec.passes.plan import IN_FLIGHT, band_in_flight

    assert band_in_flight(H100) == IN_FLIGHT and band_options(H100) == ""
    assert band_in_flight(H200) == round(IN_FLIGHT * 21818 / 15227) == 70427
    assert band_options(H200) == "in_flight=70427"
    assert band_options(B200) == band_options(target_for((9, 0), "NVIDIA H100 PCIe")) == ""


def test_stock_is_timed_at_the_split_size_inductor_picks() -> None:
    """Stock's rows per program: the largest power of two under rows / (8 x SMs), within 16-128; a
    configured size as it is; where Inductor tunes it, also half and twice the heuristic's."""
    ic = torch._inductor.config
    off = {"max_autotune": False, "coordinate_descent_tuning": False}
    if hasattr(ic.triton, "mix_order_reduction_autotune_split_size"):
        off["triton.mix_order_reduction_autotune_split_size"] = False
    with ic.patch(off):
        assert autotune.stock_split_sizes(4096, 132) == [16]  # 4096 / 1056: 3, below 16
        assert autotune.stock_split_sizes(65536, 132) == [32]  # 62
        assert autotune.stock_split_sizes(1 << 20, 132) == [128]  # 992, above 128
        with ic.patch({"triton.mix_order_reduction_split_size": 48}):
            assert autotune.stock_split_sizes(65536, 132) == [48]
        with ic.patch({"max_autotune": True}):
            assert autotune.stock_split_sizes(65536, 132) == [16, 32, 64]
            with ic.patch({"deterministic": True}):
                assert autotune.stock_split_sizes(65536, 132) == [32]


def test_a_banded_kernel_is_timed_with_its_workspace_sums(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`tune(..., banded=True)` times tilec's candidates and stock's as banded kernels (each with
    the sums of its workspace's rows), and picks by the same margin."""
    monkeypatch.setenv("TILEC_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(autotune, "_memo", {})
    monkeypatch.setattr(autotune, "_gpu", lambda: "H100")
    times = {"triton": 1.0, "triton{bands=264}": 0.8}
    called: list[str] = []
    monkeypatch.setattr(autotune, "_time_banded", lambda plan, lowered, device: called.append(plan) or times[plan])
    monkeypatch.setattr(autotune, "_time_stock_mix_order", lambda *a: called.append(STOCK) or 0.9)
    monkeypatch.setattr(autotune, "_time_plan", lambda *a: pytest.fail("a row kernel's timing"))
    monkeypatch.setattr(autotune, "_time_stock", lambda *a: pytest.fail("a row kernel's stock timing"))
    cands = ["triton", "triton{bands=264}", STOCK]
    tuned = autotune._tune(None, None, _lowered(), torch.device("cpu"), cands, lambda c: c, banded=True)  # type: ignore[arg-type,return-value]
    assert called == cands and tuned is not None and tuned.winner == "triton{bands=264}"
    assert tuned.describe() == "triton{bands=264} 0.8 ms, stock 0.9 ms, triton 1 ms"


def test_tilec_must_beat_stock_by_the_margin() -> None:
    assert pick({"gluon": 1.0, "triton": 0.9}) == "triton"
    assert pick({"gluon": 0.9, "triton": 1.0, STOCK: 1.0}) == "gluon"
    assert pick({"gluon": 0.995, STOCK: 1.0}) == STOCK  # within the margin: a tie keeps stock
    assert pick({"gluon": 1.0 - 2 * autotune.MARGIN, STOCK: 1.0}) == "gluon"
    assert pick({"triton": 1.2, STOCK: 1.0}) == STOCK


def test_describe_lists_the_fastest_first_and_the_failures() -> None:
    t = Tuned("triton", {"gluon": 0.2, "triton": 0.1, STOCK: 0.15}, {"x": "Boom"})
    assert t.describe() == "triton 0.1 ms, stock 0.15 ms, gluon 0.2 ms, x failed (Boom)"
    assert Tuned(STOCK, {STOCK: 0.1}, cached=True).describe().endswith("(cached)")


def test_wanted_on_cuda_when_tilec_or_inductor_asks() -> None:
    cuda, cpu = torch.device("cuda"), torch.device("cpu")
    with tilec.config.patch(autotune=False), torch._inductor.config.patch(max_autotune=False):
        assert not autotune.wanted(cuda)
        with tilec.config.patch(autotune=True):
            assert autotune.wanted(cuda) and not autotune.wanted(cpu)
        with torch._inductor.config.patch(max_autotune=True):
            assert autotune.wanted(cuda) and not autotune.wanted(cpu)


KERNEL = (Path(__file__).resolve().parents[1] / "kernels" / "rmsnorm_logical.tile").read_text()


def _lowered(n: int = 1000, dtype: str = "bf16") -> SimpleNamespace:
    from tilec.ir import parse

    text = KERNEL.replace("bf16", dtype).replace("1000", str(n))
    args = [
        KernelArg("in_ptr0", "arg0_1", "read", dtype, (64, n), (n, 1), 0),
        KernelArg("in_ptr1", "arg1_1", "read", dtype, (n,), (1,), 0),
        KernelArg("out_ptr0", "buf0", "write", dtype, (64, n), (n, 1), 0),
    ]
    return SimpleNamespace(kernel=parse(text, "<test>").kernels[0], args=args, sizes={})


def test_the_key_follows_the_kernel_its_layouts_and_candidates(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(autotune, "_gpu", lambda: "H100 sm_90 132 SMs")
    base = autotune.key(_lowered(), ["gluon", STOCK])
    assert base == autotune.key(_lowered(), ["gluon", STOCK])
    assert base != autotune.key(_lowered(2000), ["gluon", STOCK])
    assert base != autotune.key(_lowered(dtype="f16"), ["gluon", STOCK])
    assert base != autotune.key(_lowered(), ["gluon"])
    other = _lowered()
    other.args[0] = KernelArg("in_ptr0", "arg0_1", "read", "bf16", (64, 1000), (1024, 1), 0)  # padded rows
    assert base != autotune.key(other, ["gluon", STOCK])
    monkeypatch.setattr(autotune, "_gpu", lambda: "B200 sm_100 148 SMs")
    assert base != autotune.key(_lowered(), ["gluon", STOCK])


def test_the_disk_cache_keeps_a_choice_across_processes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TILEC_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(autotune, "_gpu", lambda: "H100")
    monkeypatch.setattr(autotune, "_memo", {})
    cands = ["gluon", "triton", STOCK]
    assert autotune._load("k1", cands) is None
    autotune._store("k1", Tuned("triton", {"gluon": 0.2, "triton": 0.1, STOCK: 0.3}))
    monkeypatch.setattr(autotune, "_memo", {})  # another process: only the file
    found = autotune._load("k1", cands)
    assert found == Tuned("triton", {"gluon": 0.2, "triton": 0.1, STOCK: 0.3}, {}, cached=True)
    assert autotune._load("k1", ["gluon", STOCK]) is None  # a winner no longer a candidate: time again
    (tmp_path / "autotune" / "k2.json").write_text("{not json")
    assert autotune._load("k2", cands) is None


def test_random_args_have_the_kernels_layouts() -> None:
    lowered = _lowered()
    lowered.args.append(KernelArg("in_ptr1", "arg1_1", "read", "i32", (3, 5), (1, 4), 2))
    lowered.args.append(KernelArg("in_ptr2", "arg2_1", "read", "i1", (7,), (1,), 0))
    x, w, y, i, b = autotune.random_args(lowered, torch.device("cpu"))
    assert (x.shape, x.stride(), x.dtype, w.shape, y.shape) == (
        (64, 1000),
        (1000, 1),
        torch.bfloat16,
        (1000,),
        (64, 1000),
    )
    assert x.float().std() > 0.5
    assert (i.shape, i.stride(), i.storage_offset(), i.dtype) == ((3, 5), (1, 4), 2, torch.int32)
    assert bool((i >= 1).all() and (i < 64).all())
    assert b.dtype == torch.bool
    lowered.args[0] = KernelArg("in_ptr0", "arg0_1", "read", "bf16", None, None, None)
    with pytest.raises(ValueError, match="not static"):
        autotune.random_args(lowered, torch.device("cpu"))
    # a symbolic layout, at the sizes the kernel is timed for
    x, *_ = autotune.random_args(lowered, torch.device("cpu"), {"arg0_1": ((6, 1000), (1024, 1), 3)})
    assert (x.shape, x.stride(), x.storage_offset(), x.dtype) == ((6, 1000), (1024, 1), 3, torch.bfloat16)


def _agree_on_rank(rank: int, world: int, store: str, out: str) -> None:
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=world)
    try:
        mine = autotune.Tuned(f"triton{{xblock={rank + 1}}}", {"stock": 1.0 + rank})
        got = [autotune.agree(mine), autotune.agree(None if rank == 0 else mine), autotune.agree(mine)]
        lines = [repr(None) if t is None else f"{t.winner} {t.ms} {t.rank0}" for t in got]
        Path(out, f"{rank}.txt").write_text("\n".join(lines))
    finally:
        dist.destroy_process_group()


def test_every_rank_takes_rank_0s_choice(tmp_path: Path) -> None:
    """Under torch.distributed each autotuned kernel's choice is rank 0's (one broadcast per kernel,
    in compile order), even where another rank timed a different winner; where rank 0 could not
    choose, no rank does (the chooser's rules decide everywhere)."""
    import torch.multiprocessing as mp

    world = 2
    mp.spawn(_agree_on_rank, args=(world, str(tmp_path / "store"), str(tmp_path)), nprocs=world, join=True)
    results = [(tmp_path / f"{r}.txt").read_text().splitlines() for r in range(world)]
    assert results[0] == ["triton{xblock=1} {'stock': 1.0} False", "None", "triton{xblock=1} {'stock': 1.0} False"]
    for r in range(1, world):
        assert results[r] == ["triton{xblock=1} {'stock': 1.0} True", "None", "triton{xblock=1} {'stock': 1.0} True"]
    assert autotune.agree(autotune.Tuned("gluon")) == autotune.Tuned("gluon")  # no process group: unchanged


def test_tilecs_banded_kernel_is_timed_with_its_own_workspace_sums() -> None:
    """tilec's side of a mix-order reduction is timed with the sums the wrapper runs after it
    where tilec takes it — one launch of its `workspace_sums` kernel — and those sums are right
    (here in Triton's interpreter)."""
    ws, sums = autotune._tilec_workspace_sums(2, 5, 70, torch.device("cpu"))
    ws.copy_(torch.randn(ws.numel(), generator=torch.Generator().manual_seed(0)))
    stock_ws, stock_sums = autotune._workspace_sums(2, 5, 70, torch.device("cpu"))
    stock_ws.copy_(ws)
    torch.testing.assert_close(sums(), torch.cat(stock_sums()))


class _SlowCompile:
    """A kernel whose compile takes `seconds` (or raises `error`), recording its launches."""

    def __init__(self, name: str, seconds: float = 0.0, error: Exception | None = None) -> None:
        self.name, self.seconds, self.error = name, seconds, error
        self.compiled, self.runs = 0, 0

    def compile_only(self, *args: object) -> None:
        import time

        time.sleep(self.seconds)
        if self.error is not None:
            raise self.error
        self.compiled += 1

    def run(self, *args: object) -> None:
        self.runs += 1


def test_a_compile_past_the_time_limit_fails_and_is_never_launched() -> None:
    import time

    slow = _SlowCompile("slow", seconds=3.0)
    start = time.monotonic()
    with pytest.raises(autotune.CompileTimeoutError, match=r"compiling slow took longer than 0\.2 s"):
        autotune._compile_within(slow, [], 0.2)
    assert time.monotonic() - start < 2.0  # it did not wait for the compile
    assert slow.runs == 0
    quick = _SlowCompile("quick")
    autotune._compile_within(quick, [], 5.0)
    assert quick.compiled == 1 and quick.runs == 0
    with pytest.raises(ValueError, match="no such layout"):
        autotune._compile_within(_SlowCompile("bad", error=ValueError("no such layout")), [], 5.0)


def test_the_autotuner_times_the_candidates_that_compile_in_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A candidate whose compile outlasts `COMPILE_TIMEOUT` fails with that reason; the others are
    timed and the fastest of them kept. Each candidate is compiled before its first timed call."""
    import tilec.runtime.launch as launch
    import tilec.runtime.timing as timing

    monkeypatch.setenv("TILEC_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(autotune, "_memo", {})
    monkeypatch.setattr(autotune, "_gpu", lambda: "H100")
    monkeypatch.setattr(autotune, "COMPILE_TIMEOUT", 0.2)
    kernels = {"gluon": _SlowCompile("gluon", seconds=3.0), "triton": _SlowCompile("triton")}
    monkeypatch.setattr(autotune, "_timing_args", lambda lowered, device: [])
    monkeypatch.setattr(launch, "load_kernel", lambda name, source, *a, **k: kernels[source])

    def device_ms(call: object, reps: int) -> float:
        assert kernels["triton"].compiled == 1  # compiled before it is timed
        call()  # type: ignore[operator]
        return 1.0

    monkeypatch.setattr(timing, "device_ms", device_ms)
    monkeypatch.setattr(autotune, "_time_stock", lambda *a: 2.0)
    build = SimpleNamespace(fallback=None, tma=())

    def plan_for(c: str) -> object:
        return SimpleNamespace(**vars(build), primary=SimpleNamespace(kind=c, source=c, order=()))

    tuned = autotune._tune(None, None, _lowered(), torch.device("cpu"), ["gluon", "triton", STOCK], plan_for)  # type: ignore[arg-type]
    assert tuned is not None and tuned.winner == "triton" and set(tuned.ms) == {"triton", STOCK}
    assert "longer than 0.2 s" in tuned.errors["gluon"]
    assert kernels["gluon"].runs == 0
