"""Kernel categories: default rules, Ascend cores, user overrides and their errors."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from parity.model.errors import ParityError
from parity.trace.builder import build_table
from parity.trace.categories import (
    NOT_DEVICE,
    UNMATCHED,
    categorize,
    default_rules_path,
    first_match,
    load_rules,
)
from parity.trace.literals import RuleMatcher, required_literal
from parity.trace.table import Kind

DEFAULT = load_rules()


@pytest.mark.parametrize(
    ("name", "kind", "expected"),
    [
        ("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*)", Kind.KERNEL, "communication"),
        ("void deep_ep::intranode::dispatch<8, 768>(int4*)", Kind.KERNEL, "communication"),
        ("dpsk::ep::combine_kernel", Kind.KERNEL, "communication"),
        ("hcom_allReduce__466_0_1", Kind.KERNEL, "communication"),
        ("MatmulAllReduce", Kind.KERNEL, "communication"),
        ("AllGatherMatmul_13", Kind.KERNEL, "communication"),
        ("aclnnMatmulReduceScatter_MatmulReduceScatter", Kind.KERNEL, "communication"),
        ("void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits>", Kind.KERNEL, "attention"),
        ("fmha_cutlassF_f16_aligned_64x64_rf_sm80", Kind.KERNEL, "attention"),
        ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64", Kind.KERNEL, "matrix"),
        ("ampere_sgemm_128x64_nn", Kind.KERNEL, "matrix"),
        ("MatMulV2", Kind.KERNEL, "matrix"),
        ("void at::native::vectorized_elementwise_kernel<4, add>", Kind.KERNEL, "vector"),
        ("triton_poi_fused_add_0", Kind.KERNEL, "vector"),
        ("Memcpy HtoD (Pageable -> Device)", Kind.MEMCPY, "memory"),
        ("Memset (Device)", Kind.MEMSET, "memory"),
        ("fbgemm::split_embedding_codegen_grad_indice_weights_cpu-dtype_Half", Kind.KERNEL, "vector"),
        ("fc-dtype_Float", Kind.KERNEL, "matrix"),
        ("void wgrad_alg0_engine<float, 128, 6, 7, 3, 3, 5, false, 512>", Kind.KERNEL, "matrix"),
        ("dma_request", Kind.KERNEL, "memory"),
        ("zzz_mystery_op", Kind.KERNEL, UNMATCHED),
        ("aten::mm", Kind.CPU_OP, NOT_DEVICE),
        ("cudaLaunchKernel", Kind.RUNTIME, NOT_DEVICE),
    ],
)
def test_default_rules(name: str, kind: Kind, expected: str) -> None:
    assert DEFAULT.category_of(name, kind) == expected


def test_ascend_core_wins_over_names_except_communication() -> None:
    # trace names say MatMul, kernel_details says it ran on the vector core: the core wins
    assert DEFAULT.category_of("MatMulV2", Kind.KERNEL, "AI_VECTOR_CORE") == "vector"
    assert DEFAULT.category_of("TransData", Kind.KERNEL, "AI_CORE") == "matrix"
    assert DEFAULT.category_of("FlashAttentionScore", Kind.KERNEL, "MIX_AIC") == "matrix"
    assert DEFAULT.category_of("Add", Kind.KERNEL, "MIX_AIV") == "vector"
    # an MC2 fused op runs on AI cores, yet it is a collective
    assert DEFAULT.category_of("MatmulAllReduce", Kind.KERNEL, "MIX_AIC") == "communication"
    assert DEFAULT.category_of("hcom_allReduce_", Kind.KERNEL, "HCCL") == "communication"


def test_categorize_table_maps_every_row() -> None:
    table = build_table(
        [
            dict(name="ampere_sgemm", start_ns=0, end_ns=10, accelerator_core=None),
            dict(name="MatMulV2", start_ns=10, end_ns=20, accelerator_core="AI_VECTOR_CORE"),
            dict(name="MatMulV2", start_ns=20, end_ns=30, accelerator_core="AI_CORE"),
            dict(name="ncclKernel", start_ns=0, end_ns=5, stream=2, accelerator_core=None),
            dict(name="aten::mm", start_ns=0, end_ns=5, kind=Kind.CPU_OP, accelerator_core=None),
            dict(name="odd", start_ns=0, end_ns=5, accelerator_core=None),
        ]
    )
    cats = categorize(table, DEFAULT)
    assert cats.of_rows().tolist() == ["matrix", "vector", "matrix", "communication", "host", "unmatched"]
    assert cats.compute_mask().tolist() == [True, True, True, False, False, True]
    assert cats.mask("communication").sum() == 1


def test_user_rules_come_first_and_can_replace(tmp_path: Path) -> None:
    user = tmp_path / "rules.toml"
    user.write_text('[[rules]]\ncategory = "moe"\npatterns = ["grouped_?gemm"]\n')
    rules = load_rules(user)
    assert rules.category_of("cutlass_grouped_gemm_kernel", Kind.KERNEL) == "moe"
    assert rules.category_of("ampere_sgemm", Kind.KERNEL) == "matrix"
    assert "moe" in rules.labels
    user.write_text('replace = true\n[[rules]]\ncategory = "matrix"\npatterns = ["gemm"]\n')
    only = load_rules(user)
    assert only.category_of("ampere_sgemm", Kind.KERNEL) == "matrix"
    assert only.category_of("ncclKernel", Kind.KERNEL) == UNMATCHED


def test_yaml_rules(tmp_path: Path) -> None:
    user = tmp_path / "rules.yaml"
    user.write_text("rules:\n  - category: attention\n    patterns: [my_attn_kernel]\n")
    assert load_rules(user).category_of("my_attn_kernel_v2", Kind.KERNEL) == "attention"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[[rules]]\ncategory = "matrix"\npatterns = ["(unclosed"]\n', "bad regular expression"),
        ('[[rules]]\npatterns = ["x"]\n', "'category' must be"),
        ('[[rules]]\ncategory = "matrix"\n', "'patterns' must be"),
        ('[[rules]]\ncategory = "matrix"\npatterns = ["x"]\nkinds = ["gpu"]\n', "'kinds' must list"),
        ('[[rules]]\ncategory = "matrix"\npatterns = ["x"]\ncolour = 1\n', "unknown key 'colour'"),
        ("rules = [\n", "not valid TOML"),
        ('[[rule]]\ncategory = "x"\n', "unknown key 'rule'"),
    ],
)
def test_bad_rules_give_one_clear_line(tmp_path: Path, text: str, message: str) -> None:
    user = tmp_path / "bad.toml"
    user.write_text(text)
    with pytest.raises(ParityError, match=message) as info:
        load_rules(user)
    assert str(user) in str(info.value) and "\n" not in str(info.value)


def test_missing_rules_file(tmp_path: Path) -> None:
    with pytest.raises(ParityError, match="cannot read rules file"):
        load_rules(tmp_path / "absent.toml")


def test_default_rules_ship_with_the_package() -> None:
    assert default_rules_path().is_file()
    assert DEFAULT.rules[0].category == "communication"


def test_literals_that_cannot_decide_a_match_are_dropped_with_the_same_answers(tmp_path: Path) -> None:
    path = tmp_path / "rules.toml"
    path.write_text('replace = true\n[[rules]]\ncategory = "matrix"\npatterns = ["gemm", "sgemm", "gemm", "Conv"]\n')
    rules = load_rules(path)
    assert rules.rules[0].literals == ("gemm", "conv")  # "sgemm" contains "gemm"; the repeat goes
    for name, expected in (("volta_sgemm_128x64", "matrix"), ("implicit_CONV2d", "matrix"), ("relu", UNMATCHED)):
        assert rules.category_of(name, Kind.KERNEL) == expected


def _reference_first(rules: tuple, name: str, kind: Kind):
    """The rule definition run literally: every pattern a case-insensitive regex search."""
    for rule in rules:
        if rule.kinds and kind not in rule.kinds:
            continue
        if any(re.search(p, name, re.IGNORECASE) for p in rule.patterns):
            return rule
    return None


def test_one_pass_gated_matching_gives_the_answers_of_every_regex(traces_dir: Path) -> None:
    """Every name of the real Kineto traces, under every kind: one Aho-Corasick pass (when
    ahocorasick_rs is installed), a scan per literal, a scan without gates and (ASCII names)
    every pattern as a regex agree."""
    from parity.trace import load_trace

    names = {"", "Memset (Device)", "ALL_REDUCE_kernel", "naïve_gemm_ß", "notify_wait", "embedding_bag_fbgemm",
             "NOTIFY Record", "sm90_XMMA_gemm", "allreducer", "dot-product", "fc_layer", "ſdma"}
    for path in sorted((traces_dir / "kineto/hta").rglob("*.json.gz"))[:14]:
        if not path.name.endswith("_et.json.gz"):  # execution traces hold no profiler events
            names.update(load_trace([path]).names)
    rules = DEFAULT.rules
    assert any(rule.gates for rule in rules)
    ungated = tuple(dataclasses.replace(rule, gates=()) for rule in rules)
    scanning, plain = RuleMatcher(rules, one_pass=False), RuleMatcher(ungated, one_pass=False)
    for name in names:
        for kind in Kind:
            got = scanning.first(name, kind)
            assert DEFAULT.matcher.first(name, kind) is got, (name, kind)
            other = plain.first(name, kind)
            assert (got and rules.index(got)) == (other and ungated.index(other)), (name, kind)
            if kind in (Kind.KERNEL, Kind.MEMCPY) and name.isascii():
                assert got is _reference_first(rules, name, kind), (name, kind)


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("gemm", "gemm"),
        ("all_?reduce", "reduce"),  # the longest run of plain characters; "all" is another
        ("^notify[ _]?(wait|record)$", "notify"),
        ("ab*c", "a"),  # "b" may be absent; "a" and "c" tie, the first is kept
        ("a|b", None),  # an alternation: no character is required
        ("x?y", "y"),
        ("(ab)+c", "c"),  # a group, even a repeated one, ends the run
        ("[ab]cd", "cd"),
        (r"\.gemm", ".gemm"),  # an escaped character is a plain character
        (r"\d+x", "x"),
        (r"ab\bcde", "cde"),  # an anchor ends the run
        ("a{2}bc", "bc"),
        ("(?i)gemm", None),  # case-insensitive: the text is not what a match contains
        ("", None),
        ("(unclosed", None),
    ],
)
def test_required_literal_is_text_every_match_contains(pattern: str, expected: str | None) -> None:
    assert required_literal(pattern) == expected
    if expected is not None:  # and indeed: matches found in sample text hold it
        for text in ("xx all_reduce abc aac ababcd bcd .gemm 12x aabc ab cde notify_wait y", "notifywait"):
            for match in re.finditer(pattern, text):
                assert expected in match.group(0)


def test_rules_gate_their_case_free_regexes() -> None:
    gates = {p.pattern: g for rule in DEFAULT.rules for p, g in zip(rule.lowered, rule.gates)}
    assert gates["all_?reduce"] == "reduce" and gates["sm\\d+_xmma"] == "_xmma"
    assert RuleMatcher(DEFAULT.rules, one_pass=False).first("sm90_xmma_gemm", Kind.KERNEL).category == "matrix"


def test_matcher_handles_an_empty_literal_and_rules_sharing_a_literal(tmp_path: Path) -> None:
    pytest.importorskip("ahocorasick_rs")
    path = tmp_path / "rules.toml"
    path.write_text('replace = true\n[[rules]]\ncategory = "a"\npatterns = ["gemm"]\nkinds = ["memcpy"]\n'
                    '[[rules]]\ncategory = "b"\npatterns = ["gemm", "add"]\n[[rules]]\ncategory = "c"\npatterns = [""]\n')
    rules = load_rules(path)
    matcher = RuleMatcher(rules.rules)

    def rules_found(lowered: str) -> set[int]:  # bit i + 1 of the found-mask: a literal of rule i
        return {i for i in range(3) if matcher.found(lowered) >> (i + 1) & 1}

    assert rules_found("sgemm_add") == {0, 1, 2}
    assert rules_found("relu") == {2}
    assert rules.category_of("sgemm", Kind.KERNEL) == "b" and rules.category_of("sgemm", Kind.MEMCPY) == "a"
    assert rules.category_of("relu", Kind.KERNEL) == "c"
    assert first_match(rules.rules, "relu", Kind.KERNEL) is first_match(rules.rules, "relu", Kind.KERNEL, one_pass=True)


def test_categorize_reads_task_types_and_cores_with_gaps() -> None:
    rows = [
        dict(name="hccl_task", task_type="Notify Wait", accelerator_core="AI_VECTOR_CORE"),  # name wins
        dict(name="x_task", task_type="Notify Wait", accelerator_core=None),  # the task type stands in
        dict(name="x_task", task_type=None, accelerator_core=None),
        dict(name="x_task", task_type="", accelerator_core=""),
        dict(name="MatMulV2", task_type="AI_CORE", accelerator_core=""),
        dict(name="MatMulV2", task_type="AI_CORE", accelerator_core="AI_VECTOR_CORE"),
        dict(name="x_task", task_type=None, accelerator_core="AI_CPU"),
    ]
    table = build_table([dict(row, start_ns=10 * i, end_ns=10 * i + 5) for i, row in enumerate(rows)])
    assert categorize(table, DEFAULT).of_rows().tolist() == [
        "communication", "communication", UNMATCHED, UNMATCHED, "matrix", "vector", "other"]


def test_answers_kept_by_found_mask_never_stand_for_a_regex_search(tmp_path: Path) -> None:
    """"xreduce" and "allreduce" contain the same texts ("reduce"); only a regex tells them
    apart, so the answer for one must not be reused for the other, in either order."""
    path = tmp_path / "rules.toml"
    path.write_text('replace = true\n[[rules]]\ncategory = "a"\npatterns = ["all_?reduce"]\n'
                    '[[rules]]\ncategory = "b"\npatterns = ["reduce"]\n')
    for names in (("xreduce", "allreduce"), ("allreduce", "xreduce")):
        rules = load_rules(path)
        got = [rules.category_of(name, Kind.KERNEL) for name in names * 2]
        assert got == [{"xreduce": "b", "allreduce": "a"}[name] for name in names * 2]
