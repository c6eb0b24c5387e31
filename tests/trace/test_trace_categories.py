"""Kernel categories: default rules, Ascend cores, user overrides and their errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from parity.model.errors import ParityError
from parity.trace import categories as categories_module
from parity.trace.builder import build_table
from parity.trace.categories import (
    NOT_DEVICE,
    UNMATCHED,
    categorize,
    default_rules_path,
    load_rules,
)
from parity.trace.table import Kind
from parity.trace.tokens import name_tokens

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
            dict(name="ncclKernel_AllReduce_RING_LL_Sum_float", start_ns=0, end_ns=5, stream=2, accelerator_core=None),
            dict(name="aten::mm", start_ns=0, end_ns=5, kind=Kind.CPU_OP, accelerator_core=None),
            dict(name="odd", start_ns=0, end_ns=5, accelerator_core=None),
        ]
    )
    cats = categorize(table, DEFAULT)
    assert cats.of_rows().tolist() == ["matrix", "vector", "matrix", "communication", "host", "unmatched"]
    assert cats.compute_mask().tolist() == [True, True, True, False, False, True]
    assert cats.mask("communication").sum() == 1


def test_one_rules_object_matches_each_name_once_across_tables(tmp_path: Path, monkeypatch) -> None:
    """A fleet worker categorises rank after rank with one Rules: a (name, kind, core, task
    type) it decided before is not matched again, and gets the same category."""
    user = tmp_path / "rules.toml"
    user.write_text('[[rules]]\ncategory = "moe"\npatterns = ["grouped_?gemm"]\n')
    rules = load_rules(user)  # a fresh Rules: nothing decided yet
    rows = [dict(name="cutlass_grouped_gemm_kernel", start_ns=0, end_ns=10, accelerator_core=None),
            dict(name="MatMulV2", start_ns=10, end_ns=20, accelerator_core="AI_VECTOR_CORE"),
            dict(name="odd", start_ns=20, end_ns=30, accelerator_core=None)]
    first = categorize(build_table(rows), rules).of_rows().tolist()
    calls = []
    real = categories_module.first_match
    monkeypatch.setattr(categories_module, "first_match", lambda *a: calls.append(a) or real(*a))
    again = categorize(build_table(rows[::-1]), rules).of_rows().tolist()
    assert first == ["moe", "vector", UNMATCHED] and again == first[::-1]
    assert calls == []  # every combination was decided by the first table
    extra = [dict(name="ncclKernel_AllReduce_RING_LL_Sum_float", start_ns=0, end_ns=5, accelerator_core=None)]
    assert categorize(build_table(rows + extra), rules).of_rows().tolist()[-1] == "communication"
    assert [c[1] for c in calls] == ["ncclKernel_AllReduce_RING_LL_Sum_float"]  # only the new name


def test_user_rules_come_first_and_can_replace(tmp_path: Path) -> None:
    user = tmp_path / "rules.toml"
    user.write_text('[[rules]]\ncategory = "moe"\npatterns = ["grouped_?gemm"]\n')
    rules = load_rules(user)
    assert rules.category_of("cutlass_grouped_gemm_kernel", Kind.KERNEL) == "moe"
    assert rules.category_of("ampere_sgemm", Kind.KERNEL) == "matrix"
    assert "moe" in rules.labels
    user.write_text('replace = true\n[[rules]]\ncategory = "matrix"\npatterns = ["gemm"]\n')
    only = load_rules(user)
    assert only.category_of("sm80_xmma_gemm_f16", Kind.KERNEL) == "matrix"
    assert only.category_of("ampere_sgemm", Kind.KERNEL) == UNMATCHED  # "sgemm" is one token, not "gemm"
    assert only.category_of("ncclKernel_AllReduce_RING_LL_Sum_float", Kind.KERNEL) == UNMATCHED


def test_yaml_rules(tmp_path: Path) -> None:
    user = tmp_path / "rules.yaml"
    user.write_text("rules:\n  - category: attention\n    patterns: [my_attn_kernel]\n")
    assert load_rules(user).category_of("my_attn_kernel_v2", Kind.KERNEL) == "attention"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[[rules]]\ncategory = "matrix"\npatterns = ["re:(unclosed"]\n', "bad regular expression"),
        ('[[rules]]\ncategory = "matrix"\npatterns = ["gemm __"]\n', "bad pattern"),
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


@pytest.mark.parametrize(
    ("name", "operation", "category"),
    [
        # LayerNorm backward: "mma" is inside "GammaBeta", yet no token is "mma"
        ("void at::native::(anonymous namespace)::GammaBetaBackwardCUDAKernel<float, float>(long, long)",
         "normalization", "vector"),
        # cuDNN batch norm: a cudnn:: kernel is not a matrix one
        ("void cudnn::bn_fw_tr_1C11_kernel_NCHW<float, float, int, 512, true, 1, true>(cudnnTensorStruct)",
         "normalization", "vector"),
        ("void cudnn::bn_bw_1C11_singleread<float, 512, true, 1, 2, 0>(cudnn::bn_bw_1C11_args<float>)",
         "normalization", "vector"),
        # a layout transpose, not a convolution
        ("void cudnn::ops::nchwToNhwcKernel<float, float, float, false, true>(cudnn::ops::nchw2nhwc_params_t<float>)",
         "copy", "vector"),
        ("void linearize_index_kernel<long>(at::GenericPackedTensorAccessor<long>)", "copy", "vector"),
        ("void fbgemm_gpu::permute_2D_lengths_kernel<int>(int, int)", "copy", "vector"),
        ("aclnnAdaptiveAvgPool2dBackward_AdaptiveAvgPool3dGradAiCore_AdaptiveAvgPool3dGrad", "reduction", "vector"),
        ("void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4>(Params)", "gemm", "matrix"),
        ("cudnn_infer_volta_scudnn_128x64_relu_xregs_large_nn_v1", "convolution", "matrix"),
        ("void cutlass_cudnn_infer::Kernel<cutlass_tensorop_s1688dgrad_optimized_tf32_64x256_32x4_nhwc_align4>",
         "convolution", "matrix"),
        ("aclnnMm_MatMulCommon_MatMulV2", "gemm", "matrix"),
        ("Conv2DBackpropFilter6", "convolution", "matrix"),
        ("hcom_allReduce__576_0_1", "communication", "communication"),
        ("aclnnEqTensor_BroadcastToAiCore_BroadcastTo", "copy", "vector"),  # no collective
    ],
)  # fmt: skip
def test_rules_name_operations_on_tokens(name: str, operation: str, category: str) -> None:
    rule = DEFAULT.rule_of(name, Kind.KERNEL)
    assert rule is not None and (rule.operation, rule.category) == (operation, category)


def test_names_split_into_tokens_before_their_arguments() -> None:
    assert name_tokens("void at::native::(anonymous namespace)::GammaBetaBackwardCUDAKernel<float>(long)") == (
        "void", "at", "native", "gamma", "beta", "backward", "cuda", "kernel", "float")
    assert name_tokens("cutlass_80_tensorop_s1688gemm") == ("cutlass", "80", "tensorop", "s", "1688", "gemm")
    assert name_tokens("aclnnNLLLoss_TopKV2") == ("aclnn", "nll", "loss", "top", "kv", "2")
    assert name_tokens("Memcpy HtoD (Pinned -> Device)") == ("memcpy", "hto", "d")


LIBRARIES = {"cudnn", "cublas", "cublaslt", "cutlass", "nccl", "rccl", "hccl", "miopen", "rocblas", "hipblaslt",
             "fbgemm", "deepep", "dpskep", "magma", "cask", "triton", "aclnn", "cub", "c10d", "mc2", "onednn"}


def test_no_default_rule_is_a_library_name_alone() -> None:
    for rule in DEFAULT.rules:
        for pattern in rule.tokens:
            words = {t.text for t in pattern.terms}
            assert not (words and words <= LIBRARIES), (rule.operation, pattern.source)


def test_a_user_regex_pattern_searches_the_whole_name(tmp_path: Path) -> None:
    user = tmp_path / "rules.toml"
    user.write_text('[[rules]]\noperation = "moe"\ncategory = "moe"\npatterns = ["re:grouped_?gemm"]\n')
    rules = load_rules(user)
    assert rules.category_of("cutlass_groupedgemm_kernel", Kind.KERNEL) == "moe"
    assert rules.rules[0].operation == "moe"


def test_the_rule_list_in_the_docs_is_the_default_rules() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "trace-rules.md").read_text(encoding="utf-8")
    headings = [line for line in doc.splitlines() if line.startswith("## ") and "no rule" not in line]
    assert headings == [
        f"## {i + 1}. {rule.operation} -> {rule.category}"
        + (f", kinds {', '.join(k.name.lower() for k in rule.kinds)}" if rule.kinds else "")
        for i, rule in enumerate(DEFAULT.rules)
    ]
