"""separate-reads on the kernels the Gluon pipelines make (its golden test is separate_reads.tile):
every Gluon form ends with it, it places a barrier between the phases' reads of the cached row, the
kernel still verifies, and under the interpreter (which checks every barrier and shared-memory
access) it writes the same bits as without the barriers; a second run places nothing."""

from __future__ import annotations

import pytest
from test_reuse_peel_fp32 import same_bits

from examples import example, run_interp
from tilec.ir import Kernel, Module, print_kernel, verify
from tilec.ir.ops import CtaBarrierOp, SmemLoadOp
from tilec.passes import PASSES, Remark, run_pipeline
from tilec.passes.pipelines import GLUON_DEFAULT, gluon_form

PASS = "separate-reads"
FORMS = {
    "default": gluon_form(cache="auto"),
    "cache-only": gluon_form(pipelined=False),
    "ring": gluon_form("xblock=1,rblock=256,num_warps=4", stages=2),
    "persistent-ws": gluon_form("xblock=1,rblock=256,num_warps=4", persistent=True, stages=3, specialize=True),
}
RESIDENT = ("default", "cache-only")  # the whole row block stays in shared memory for every phase


def barriers(kernel: Kernel) -> int:
    return sum(isinstance(op, CtaBarrierOp) for op in kernel.walk())


def test_the_pass_is_registered_and_last_in_every_gluon_form() -> None:
    assert PASS in PASSES
    # after the last dce, and early-loads (which moves reads, never merges them)
    assert GLUON_DEFAULT[-1] == PASS and GLUON_DEFAULT[-3:-1] == ["dce", "early-loads"]
    for form in [*FORMS.values(), gluon_form(persistent=True), gluon_form(specialize=True)]:
        assert form.endswith(",dce,early-loads," + PASS), form


@pytest.mark.parametrize("form", sorted(FORMS))
@pytest.mark.parametrize("name", ["rmsnorm", "layernorm", "softmax"])
@pytest.mark.parametrize("rows,cols", [(3, 1000), (5, 4096)])
def test_barriers_between_the_phases_reads_change_no_bit(form: str, name: str, rows: int, cols: int) -> None:
    ex = example(name, rows, cols)
    without = ex.kernel(FORMS[form].removesuffix("," + PASS))
    module = Module([ex.kernel(FORMS[form].removesuffix("," + PASS))])
    before = barriers(module.kernels[0])
    run_pipeline(module, PASS)  # verifies after the pass
    (with_barriers,) = module.kernels
    verify(with_barriers)
    assert sum(isinstance(op, SmemLoadOp) for op in with_barriers.walk()) >= 2
    if form in RESIDENT and name != "layernorm":
        # every phase reads the resident row again with only math between: the reads are kept apart
        assert barriers(with_barriers) > before, print_kernel(with_barriers)
    else:
        # LayerNorm stores its mean and rstd between the phases' reads, and a ring streams the row
        # (each read waits on its slot's mbarrier first): the reads are apart already
        assert barriers(with_barriers) == before, print_kernel(with_barriers)
    assert same_bits(run_interp(ex, without), run_interp(ex, with_barriers)), (form, name, rows, cols)

    # a second run places nothing and says why
    text = print_kernel(with_barriers)
    remarks: list[Remark] = []
    run_pipeline(module, PASS, remarks=remarks)
    assert print_kernel(module.kernels[0]) == text
    assert [r.message for r in remarks] == [
        "no shared-memory buffer is read twice without a side effect between the reads"
    ]
