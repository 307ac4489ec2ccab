"""Golden-file tests of etcpre: generated C and diagnostics, byte for byte.

Regenerate with `make golden` and review the diff before committing it.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "golden"))
import regen  # noqa: E402

CASES = regen.cases()
IDS = [str(c.relative_to(regen.GOLDEN).with_suffix("")) for c in CASES]


@pytest.mark.parametrize("tc", CASES, ids=IDS)
def test_golden(tc: Path) -> None:
    rc, out, err = regen.translate(tc)
    c_file, err_file = tc.with_suffix(".c"), tc.with_suffix(".err")
    expected_err = err_file.read_text() if err_file.exists() else ""
    assert err == expected_err, "diagnostics differ (make golden regenerates; review it)"
    if c_file.exists():
        assert rc == 0
        assert out == c_file.read_text(), "generated C differs (see make golden)"
    else:
        assert rc == 1, "translation was expected to fail"
        assert out == ""


def test_every_error_case_fails_and_every_other_translates() -> None:
    for tc in CASES:
        has_c = tc.with_suffix(".c").exists()
        assert has_c == (not tc.stem.startswith("err_")), tc.name


def test_error_cases_cover_the_issue_list() -> None:
    names = {c.stem for c in CASES}
    for needed in ["err_syntax", "err_duplicate_label", "err_missing_thread",
                   "err_init_sync_thread0", "err_slot_range", "err_no_slots",
                   "err_slots_not_first", "err_undeclared_callee", "err_not_threaded",
                   "err_argument_count", "err_call_end_function", "err_invoke_return",
                   "err_c_return", "err_primitive_in_plain", "err_goto_thread",
                   "warn_never_enabled", "warn_unsignalled_slot",
                   # issue 14
                   "err_argument_types", "err_prototype_mismatch", "err_transfer_size",
                   "err_threaded_as_c", "err_misspelled", "err_c_main", "err_slot_constants",
                   "err_vla"]:
        assert needed in names
