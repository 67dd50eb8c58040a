"""Test collection: golden `.tile` files with RUN lines run as tests; `gpu` tests need a GPU."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

# Without a GPU, Triton runs emitted kernels in its interpreter. Triton decides when it is first
# imported, so this comes before anything imports it. (Gluon is compiled in subprocesses.)
if shutil.which("nvidia-smi") is None and os.environ.get("TILEC_GPU_TESTS") != "1":
    os.environ["TRITON_INTERPRET"] = "1"

import pytest

sys.path.insert(0, str(Path(__file__).parent))

import profiles  # noqa: F401  (registers the hypothesis profiles; --hypothesis-profile picks one)
from lit import LitError, run_file


def pytest_collect_file(parent: pytest.Collector, file_path: Path) -> pytest.Collector | None:
    if file_path.suffix == ".tile" and "RUN:" in file_path.read_text(errors="replace"):
        return TileFile.from_parent(parent, path=file_path)
    return None


class TileFile(pytest.File):
    def collect(self):
        yield TileItem.from_parent(self, name="lit")


class TileItem(pytest.Item):
    def runtest(self) -> None:
        run_file(self.path)

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, LitError):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style)

    def reportinfo(self):
        return self.path, 0, f"lit: {self.path.name}"


def _has_gpu() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except Exception:
        return False


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    gpu_items = [i for i in items if "gpu" in i.keywords]
    if gpu_items and not _has_gpu():
        skip = pytest.mark.skip(reason="needs an NVIDIA GPU (run scripts/gpu-tests on the GPU machine)")
        for item in gpu_items:
            item.add_marker(skip)


@pytest.fixture
def rewrite_calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[object, ...]]:
    """The calls the test makes of the backend's decomposition of an embedding's weight gradient
    (`tilec.inductor.decompositions`), each as its arguments after the two tensors: the table's
    rows, the padding id, scale_grad_by_freq."""
    from tilec.inductor import decompositions

    calls: list[tuple[object, ...]] = []

    def counted(*args: object) -> object:
        calls.append(args[2:])
        return decompositions.embedding_dense_backward(*args)  # type: ignore[arg-type]

    monkeypatch.setitem(
        decompositions.REWRITES, "embedding_dense_backward", ("embedding_dense_backward.default", counted)
    )
    return calls
