"""The decompositions `backend="tilec"` gives AOT autograd in place of Inductor's
(`tilec.inductor.decompositions`): an embedding's weight gradient accumulated a row per token gives
Inductor's decomposition's result bit for bit (repeated ids, a padding id, ids outside the table,
fp16, bf16; fp32 weights and `scale_grad_by_freq` take Inductor's own), eagerly and compiled by
Inductor through the backend; the table is replaced for the backend's compile alone, and its FX
graphs still reach Inductor's cache; which GPUs take it is their tables' (`chooser.GRAPH_REWRITES`),
and where decline is off every rewrite is taken."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from hypothesis import example, given, settings
from hypothesis import strategies as st
from profiles import examples
from torch._decomp.decompositions import embedding_dense_backward as stock

import tilec
from tilec.inductor import decompositions
from tilec.inductor.backend import rewrites
from tilec.passes.chooser import GRAPH_REWRITES, graph_rewrites


@settings(max_examples=examples(30), deadline=None)
@given(
    vocab=st.integers(1, 40),
    tokens=st.integers(1, 70),
    hidden=st.sampled_from([1, 3, 8]),
    dtype=st.sampled_from([torch.bfloat16, torch.float16, torch.float32]),
    padding=st.integers(-2, 5),
    outside=st.booleans(),
    seed=st.integers(0, 2**16),
)
@example(vocab=1, tokens=5, hidden=3, dtype=torch.bfloat16, padding=0, outside=True, seed=0)
@example(vocab=30, tokens=64, hidden=8, dtype=torch.bfloat16, padding=-1, outside=False, seed=1)
def test_the_embedding_gradient_by_token_rows_is_inductors_bit_for_bit(
    vocab: int, tokens: int, hidden: int, dtype: torch.dtype, padding: int, outside: bool, seed: int
) -> None:
    gen = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, vocab, (tokens,), generator=gen)
    ids[:: max(1, tokens // 3)] = ids[0]  # repeated ids: several tokens add into one row
    if outside:  # ids the table has no row for get nothing (Inductor's masks them)
        ids[-1] = vocab + 2
        ids[0] = -3
    grad = (torch.randn(tokens, hidden, generator=gen) * 4).to(dtype)
    ours = decompositions.embedding_dense_backward(
        grad.view(1, tokens, hidden), ids.view(1, tokens), vocab, padding, False
    )
    theirs = stock(grad.view(1, tokens, hidden), ids.view(1, tokens), vocab, padding, False)
    assert ours.dtype == theirs.dtype == dtype and ours.shape == theirs.shape == (vocab, hidden)
    assert torch.equal(ours, theirs)


def test_scaled_by_frequency_takes_inductors_decomposition() -> None:
    ids = torch.tensor([[0, 2, 2, 1]])
    grad = torch.randn(1, 4, 3).bfloat16()
    torch.testing.assert_close(
        decompositions.embedding_dense_backward(grad, ids, 3, -1, True), stock(grad, ids, 3, -1, True), rtol=0, atol=0
    )


def test_the_table_is_replaced_in_the_block_only() -> None:
    from torch._inductor.decomposition import select_decomp_table

    op = torch.ops.aten.embedding_dense_backward.default
    before = dict(select_decomp_table())
    with decompositions.replaced({"embedding_dense_backward": None}):
        inside = dict(select_decomp_table())  # (the same dict: copied)
        assert decompositions.active() == ("embedding_dense_backward",)
    after = dict(select_decomp_table())
    assert inside[op] is decompositions.embedding_dense_backward and before[op] is after[op] is not inside[op]
    assert set(inside) == set(before) and all(inside[k] is before[k] for k in before if k != op)
    assert decompositions.active() == ()
    with decompositions.replaced({}):
        assert select_decomp_table()[op] is before[op]


def test_each_gpus_rewrites_are_known_and_an_unknown_gpu_has_none() -> None:
    assert [r.name for r in graph_rewrites("NVIDIA H200")] == ["embedding_dense_backward"]
    assert graph_rewrites("NVIDIA H100 80GB HBM3") == () and graph_rewrites("NVIDIA Unknown") == ()
    assert all(r.name in decompositions.REWRITES for rs in GRAPH_REWRITES.values() for r in rs)


def test_the_cpu_takes_every_rewrite_only_where_decline_is_off() -> None:
    x = [torch.zeros(2), 3]
    with tilec.config.patch(decline=False):
        assert rewrites(x) == dict.fromkeys(decompositions.REWRITES)  # at any number of tokens
        with tilec.config.patch(enabled=False):
            assert rewrites(x) == {}
    with tilec.config.patch(decline=True):
        assert rewrites(x) == {}


def test_a_gpus_rewrite_takes_the_tokens_its_run_measured(rewrite_calls: list[tuple[object, ...]]) -> None:
    """A table's rewrite covers the range of tokens its run measured: an op of fewer or more
    tokens keeps Inductor's decomposition (the same result here: the CPU's sums are in order), and
    the cache key names the range."""
    from torch._inductor.decomposition import select_decomp_table

    op = decompositions.overload("embedding_dense_backward")
    grad = torch.randn(1, 64, 3).bfloat16()
    with decompositions.replaced({"embedding_dense_backward": (32, 64)}):
        assert decompositions.active() == ("embedding_dense_backward[32,64)",)
        table = select_decomp_table()
        for tokens in (48, 31, 64):
            ids = torch.randint(0, 5, (1, tokens))
            got = table[op](grad[:, :tokens], ids, 5, -1, False)
            assert torch.equal(got, stock(grad[:, :tokens], ids, 5, -1, False))
    assert rewrite_calls == [(5, -1, False)]  # 48 tokens only


@pytest.mark.usefixtures("uninstalled")
@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "symbolic-tokens"])
def test_a_symbolic_number_of_tokens_keeps_inductors_decomposition_under_a_range(
    dynamic: bool, rewrite_calls: list[tuple[object, ...]]
) -> None:
    """Tokens known only at run time are not known to lie in a measured range: Inductor's
    decomposition; static tokens in the range take the rewrite (where decline is off, symbolic
    tokens take it too: the test below)."""
    torch.manual_seed(0)
    model = Tied(37, 16).bfloat16()
    compiled = torch.compile(model, dynamic=dynamic)
    with decompositions.replaced({"embedding_dense_backward": (32, 64)}):
        for tokens in (24, 20):  # 48 and 40 tokens: in the range
            compiled(torch.randint(0, 37, (2, tokens))).backward()
    assert rewrite_calls == ([] if dynamic else [(37, 1, False)] * 2), rewrite_calls


class Tied(torch.nn.Module):
    """An embedding whose table is also the output projection's weight (GPT-2, Gemma): the
    table's gradient is the projection's plus the embedding's."""

    def __init__(self, vocab: int, hidden: int) -> None:
        super().__init__()
        self.emb = torch.nn.Embedding(vocab, hidden, padding_idx=1)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        h = torch.nn.functional.rms_norm(self.emb(ids), (self.emb.weight.shape[1],))
        return torch.nn.functional.cross_entropy((h @ self.emb.weight.t()).float().flatten(0, 1), ids.flatten())


@pytest.mark.usefixtures("uninstalled")
@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "symbolic-tokens"])
def test_a_model_compiled_through_the_backend_gets_the_eager_gradient(
    dynamic: bool, rewrite_calls: list[tuple[object, ...]]
) -> None:
    """Also with a symbolic number of tokens (the first-occurrence table's fill value is then a
    symbol), at two lengths."""
    torch.manual_seed(0)
    model = Tied(37, 16).bfloat16()
    compiled = torch.compile(model, backend="tilec", dynamic=dynamic)
    for tokens in (24, 31) if dynamic else (24,):
        ids = torch.randint(0, 37, (2, tokens))
        ids[0, :6] = 5  # repeated
        ids[1, 3] = 1  # the padding id
        model.emb.weight.grad = None
        model(ids).backward()
        expected = model.emb.weight.grad.clone()
        model.emb.weight.grad = None
        compiled(ids).backward()
        assert model.emb.weight.grad.dtype == torch.bfloat16
        torch.testing.assert_close(model.emb.weight.grad.float(), expected.float(), rtol=2e-2, atol=2e-3)
    # each backward graph compiled took the rewrite, with the padding id
    assert rewrite_calls and set(rewrite_calls) == {(37, 1, False)}, rewrite_calls


@pytest.mark.usefixtures("uninstalled")
def test_a_graph_compiled_with_rewrites_is_cached(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The rewrites reach the cache key (`active()`), not a table Inductor cannot hash: the second
    compile of the same graph loads the first's code."""
    from torch._dynamo.utils import counters

    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path))
    hits = []
    with torch._inductor.config.patch(fx_graph_cache=True, force_disable_caches=False):
        for _ in range(2):
            torch._dynamo.reset()
            counters.clear()
            torch.compile(lambda x: torch.softmax(x * 2, -1), backend="tilec", dynamic=False)(torch.randn(8, 100))
            hits.append((counters["inductor"]["fxgraph_cache_hit"], counters["inductor"]["fxgraph_cache_bypass"]))
    assert hits == [(0, 0), (1, 0)], hits


def test_the_probes_table_is_inductors_with_the_rewrite() -> None:
    """bench/rewrite_probe.py's `tilecfb` side: Inductor's table with this rewrite (handed to
    compile_fx, as its runs were made)."""
    from bench_scripts import load
    from torch._inductor.decomposition import select_decomp_table

    op = torch.ops.aten.embedding_dense_backward.default
    table = load("rewrite_probe").rewritten()
    assert table[op] is decompositions.embedding_dense_backward
    assert set(table) == set(select_decomp_table()) and select_decomp_table()[op] is not table[op]


def test_a_table_built_otherwise_is_said_and_left_alone(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A torch whose `select_decomp_table` builds a new table each call would not see the
    replaced entries: tilec says so in its log, and Inductor's own decompositions stay."""
    from torch._inductor import decomposition

    fresh = dict(decomposition.select_decomp_table())
    monkeypatch.setattr(decomposition, "select_decomp_table", lambda: dict(fresh))
    with caplog.at_level("WARNING", logger="tilec"), decompositions.replaced({"embedding_dense_backward": None}):
        assert decomposition.select_decomp_table()[decompositions.overload("embedding_dense_backward")] is not (
            decompositions.embedding_dense_backward
        )
    assert "did not take embedding_dense_backward" in caplog.text
