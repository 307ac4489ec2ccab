"""docs/protocols.md stays the reference the code says it is: every rule the code
cites (N1, R4, T2, ...) is defined there, and every ETC_* environment variable the
runtime, etcc, etcrun or the test suite reads is in its table."""

from __future__ import annotations

import re

from support import ROOT

DOC = (ROOT / "docs" / "protocols.md").read_text()
CITING = [*ROOT.glob("runtime/**/*.c"), *ROOT.glob("runtime/**/*.h"),
          *ROOT.glob("etcpre/launch/*.py")]


def defined_rules() -> set[str]:
    return set(re.findall(r"\*\*([NMFRTLWPA]\d+)\*\*", DOC))


def test_every_rule_the_code_cites_is_defined() -> None:
    defined = defined_rules()
    assert {"N1", "N10", "M1", "F4", "R12", "T10", "L6", "W6", "P1", "P9", "A1", "A4"} <= defined
    missing = {}
    for path in CITING:
        for rule in re.findall(r"\b([NMFRTLWPA]\d{1,2})\b", path.read_text()):
            if rule not in defined:
                missing.setdefault(rule, []).append(str(path.relative_to(ROOT)))
    assert not missing, f"cited in the code, not defined in docs/protocols.md: {missing}"


def test_every_environment_variable_is_documented() -> None:
    read = set()
    for path in ROOT.glob("runtime/**/*.c"):
        read |= set(re.findall(r'getenv\("(ETC_[A-Z_]+)"\)', path.read_text()))
    # the drivers, the launcher, the toolchain and the suite (the translator's
    # strings name the ABI's ETC_ macros, not variables)
    for path in [*ROOT.glob("etcpre/cli/*.py"), *ROOT.glob("etcpre/launch/*.py"),
                 ROOT / "etcpre" / "toolchain.py", ROOT / "tests" / "support.py"]:
        read |= set(re.findall(r"[\"'](ETC_[A-Z_]+)[\"']", path.read_text()))
    assert {"ETC_NODES", "ETC_LB", "ETC_RUNTIME", "ETC_TCP_CONTROL"} <= read
    table = set(re.findall(r"^\| `(ETC_[A-Z_]+)` \|", DOC, re.MULTILINE))
    assert read - table == set(), f"not in docs/protocols.md's table: {sorted(read - table)}"
    assert table - read == set(), f"documented, but nothing reads: {sorted(table - read)}"


def test_the_layer_contract_names_every_function_of_net_h() -> None:
    # the contract's paragraph lists what a layer provides ("etc_net_start", then
    # "_send", ...) and the core services it may use, by name
    header = (ROOT / "runtime" / "net" / "net.h").read_text()
    declared = set(re.findall(r"^\w.*?\b(etc_\w+)\(", header, re.MULTILINE))
    assert {"etc_net_start", "etc_net_abort", "etc_deliver", "etc_usable_cpus"} <= declared
    # the paragraph alone, not the rules after it (they name some functions too)
    section = DOC[DOC.index("## The layer contract"):]
    section = section[:section.index("\n- **N1**")]
    named = set(re.findall(r"`(etc_\w+)`", section))
    named |= {"etc_net" + s for s in re.findall(r"`(_\w+)`", section)}
    assert declared - named == set(), f"not in protocols.md's contract: {declared - named}"
