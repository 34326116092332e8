"""packaging/llama_source.py: Confab's changes to the vendored llama.cpp, applied to an unpacked sdist.
The real sdist is patched by every llama.cpp build (bootstrap.py fails the build when a patch's text is
not there); here a stand-in tree holds the text each patch was written against."""

from __future__ import annotations

import tarfile
from pathlib import Path

import pytest

import bootstrap  # noqa: F401 - puts packaging/ on sys.path
import llama_patches
import llama_source


def sdist_tree(root: Path, text_of=lambda patch: f"// before\n{patch.old}// after\n") -> Path:
    """A stand-in source tree: each file holds the text of every patch made to it, in order."""
    src = root / "llama_cpp_python-0.3.16"
    texts: dict[Path, str] = {}
    for patch in llama_source.PATCHES:
        path = llama_source.vendored(src) / patch.path
        texts[path] = texts.get(path, "") + text_of(patch)
    for path, text in texts.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return src


def _is_patched(src: Path) -> bool:
    """Whether every patch's new text is in the unpacked sdist at `src`, once."""
    return all((llama_source.vendored(src) / p.path).read_text(encoding="utf-8").count(p.new) == 1
               for p in llama_source.PATCHES)


def test_patches_apply_once_and_again_changes_nothing(tmp_path):
    src = sdist_tree(tmp_path)
    assert not _is_patched(src)
    llama_source.apply(src)
    assert _is_patched(src)
    path = llama_source.vendored(src) / llama_patches.SKIP_MASKED_RUNS.path
    once = path.read_text()
    assert once.startswith("// before\n") and once.endswith("// after\n")
    assert "0xFC00FC00FC00FC00ull" in once
    dots = (llama_source.vendored(src) / llama_patches.Q4_1_TWO_BY_TWO.path).read_text()
    assert dots.count("if (nrc == 2) {") == 3, "the Q4_1, Q8_0 and Q6_K two-row dots, in the one file they share"
    llama_source.apply(src)
    assert path.read_text() == once


def test_another_llama_cpp_fails_loudly_rather_than_building_unpatched(tmp_path):
    src = sdist_tree(tmp_path, text_of=lambda patch: patch.old.replace("nek1", "n_kv"))
    with pytest.raises(RuntimeError, match="written for another llama.cpp"):
        llama_source.apply(src)


def test_the_masked_run_skip_leaves_the_original_check_in_place():
    """Cells the skip does not take still go through llama.cpp's own -inf check (same cells skipped)."""
    patch = llama_patches.SKIP_MASKED_RUNS
    assert patch.new.endswith(patch.old.split("\n", 1)[1])
    assert patch.new.startswith(patch.old.split("\n", 1)[0])


TWO_BY_TWO = {"Q4_1": (llama_patches.Q4_1_TWO_BY_TWO, llama_patches.Q4_1_TWO_ROWS_ON_AVX2),
              "Q8_0": (llama_patches.Q8_0_TWO_BY_TWO, llama_patches.Q8_0_TWO_ROWS_ON_AVX2)}


@pytest.mark.parametrize("kind", TWO_BY_TWO)
def test_a_two_by_two_dot_keeps_the_one_column_path_and_comes_with_its_rows_setting(kind):
    """The one-column path is what a step of one row (and any odd count) computes: it stays as it
    was, after the new block, so both give each sum by the same operations
    (tests/engine/test_llamacpp_rows.py checks the results bit for bit). ggml asks for two rows only
    where the x86 kernel has them: the kernel and its `nrows` setting go together, on AVX2 alone."""
    kernel, rows = TWO_BY_TWO[kind]
    assert kernel in llama_source.PATCHES and rows in llama_source.PATCHES
    head, tail = kernel.old.split("\n    int ib = 0;\n", 1)
    assert kernel.new.startswith(head.replace("    assert(nrc == 1);\n", ""))
    assert kernel.new.endswith("    assert(nrc == 1);\n\n    int ib = 0;\n" + tail)
    assert "#if defined(__AVX2__)\n    if (nrc == " in kernel.new and "return;\n    }\n#endif\n" in kernel.new
    assert "__ARM_FEATURE_MATMUL_INT8) || defined(__AVX2__)" in rows.new


def test_unpack_gives_the_one_source_folder(tmp_path):
    src = sdist_tree(tmp_path / "made")
    tarball = tmp_path / "llama_cpp_python-0.3.16.tar.gz"
    with tarfile.open(tarball, "w:gz") as tar:
        tar.add(src, arcname=src.name)
    unpacked = llama_source.unpack(tarball, tmp_path / "out")
    assert unpacked == tmp_path / "out" / src.name
    llama_source.apply(unpacked)
    assert _is_patched(unpacked)


def test_odd_columns_keep_the_two_column_kernel_on_x86_only():
    """An odd count of columns takes pairs and then one column on x86 (where both paths sum alike);
    everywhere else, and for products with broadcast dims, ggml's own choice stays as it was."""
    patch = llama_patches.ODD_COLUMNS_TWO_BY_TWO
    assert patch in llama_source.PATCHES
    assert patch.new.startswith("#if defined(__AVX2__) && !defined(__ARM_FEATURE_MATMUL_INT8)\n")
    assert "ne12 == 1 && ne13 == 1" in patch.new
    assert patch.old in patch.new, "the original choice, unchanged, in the else branch"


def test_four_columns_only_for_q4_1_and_q6_k_plain_products_on_x86():
    """The two-by-four dots (nrc 4, a count ggml itself never asks for) are reached only from
    ggml-cpu.c's loop for Q4_1 or Q6_K weights in a plain 2-D product on x86, where a block has four
    columns left; its buffer holds four columns, and the call and the copy out use the count it chose."""
    loop, call = llama_patches.FOUR_COLUMNS, llama_patches.FOUR_COLUMNS_CALL
    assert all(p in llama_patches.PATCHES for p in (loop, call))
    kernel = llama_patches.Q4_1_TWO_BY_TWO
    assert kernel.new.index("    if (nrc == 4) {") < kernel.new.index("    if (nrc == 2) {")
    assert kernel.new.count("return;") == 2
    q6 = llama_patches.Q6_K_TWO_ROWS.new
    assert q6.index("    if (nrc == 4) {") < q6.index("    if (nrc == 2) {") < q6.index("    assert(nrc == 1);")
    assert "(type == GGML_TYPE_Q4_1 || type == GGML_TYPE_Q6_K) && num_rows_per_vec_dot == 2\n        && ne12 == 1 && ne13 == 1" in loop.new
    assert "#else\n    const bool four_columns = false;" in loop.new and "float tmp[64];" in loop.new
    assert "ir1 + 4 <= MIN(iir1 + blck_1, ir1_end) ? 4 : num_rows_per_vec_dot" in loop.new
    assert "(int) columns);" in call.new and "cn < columns;" in call.new


def test_the_q6_k_two_row_dot_keeps_the_one_column_path_and_comes_with_its_rows_setting():
    """Q6_K (the output layer and half the down projections of a Q4_K_M file) gets a two-row dot on
    x86: a new function before the one-column kernel, which stays as it was after the two calls into
    it; ggml asks for two rows on AVX2 alone (tests/engine/test_llamacpp_rows.py: bit for bit)."""
    kernel, rows = llama_patches.Q6_K_TWO_ROWS, llama_patches.Q6_K_TWO_ROWS_ON_AVX2
    assert kernel in llama_source.PATCHES and rows in llama_source.PATCHES
    signature, rest = kernel.old.split("\n", 1)
    assert kernel.new.startswith("#if defined(__AVX2__)\n") and kernel.new.count(signature) == 1
    assert rest.startswith("    assert(n % QK_K == 0);\n    assert(nrc == 1);\n")
    assert kernel.new.endswith("    return;\n    }\n#endif\n    assert(nrc == 1);\n")
    body = kernel.new.split(signature, 1)[1]
    assert "ggml_vec_dot_q6_K_q8_K_two_rows(4," in body and "ggml_vec_dot_q6_K_q8_K_two_rows(2," in body
    assert "__ARM_FEATURE_MATMUL_INT8) || defined(__AVX2__)" in rows.new and "ggml_vec_dot_q6_K_q8_K" in rows.old


def test_the_one_column_q4_k_kernel_scales_as_the_four_column_one():
    """ggml's repacked Q4_K product takes four columns at a time and one at a time for the rest; the
    four-column kernel scales each pair of sub-blocks into the float sums, the one-column kernel
    (as published) each super block, so a row's logits depended on its step's row count
    (tests/engine/test_llamacpp_rows.py, Q4_K and Q6_K: 1.39 apart). The patch moves the one-column
    kernel's scaling into the sub-block loop; its integer sums are left as they were."""
    patch = llama_patches.Q4_K_ONE_COLUMN_AS_FOUR
    assert patch in llama_source.PATCHES and patch.path.endswith("arch/x86/repack.cpp")
    loop_end = patch.new.index("                }\n")
    assert patch.new.index("_mm256_cvtepi32_ps(iacc_sb), _mm256_mul_ps(col_scale_f32, row_scale_f32)") < loop_end
    assert patch.new.index("_mm256_cvtepi32_ps(iacc_min_sb), _mm256_mul_ps(col_dmin_f32, row_scale_f32)") < loop_end
    assert "_mm256_cvtepi32_ps(iacc_b)" in patch.old and "_mm256_cvtepi32_ps(iacc_b)" not in patch.new
    assert patch.new.startswith(patch.old.split("\n\n", 1)[0])


def test_q4_k_eight_columns_only_add_a_pass_of_two_groups_to_the_avx512_loop():
    """ggml's repacked Q4_K product on AVX-512 takes sixteen columns a pass, then four: eight sessions
    unpacked each weight twice. The sixteen-column loop now runs as a lambda of the group count, four
    groups inlined where it was and two in a function of its own, and stores only the columns a pass
    took; the four-column loop after it, and the AVX2 loops, stay as published
    (tests/engine/test_llamacpp_kernels.py: every count gives the same floats, bit for bit)."""
    tag, loop, groups, store = (llama_patches.Q4_K_EIGHT_COLUMNS_TAG, llama_patches.Q4_K_EIGHT_COLUMNS_LOOP,
                                llama_patches.Q4_K_EIGHT_COLUMNS_GROUPS, llama_patches.Q4_K_EIGHT_COLUMNS_STORE)
    assert all(p in llama_patches.PATCHES and p.path.endswith("arch/x86/repack.cpp") for p in (tag, loop, groups, store))
    assert tag.new.endswith(tag.old) and "template <int N> struct confab_column_groups" in tag.new
    assert loop.old.startswith("    const __m512i m4bexpanded") and "constexpr int groups" in loop.new
    assert "for (int i = 0; i < groups - 1; ++i)" in loop.new and "for (int i = 0; i < 3; ++i)" in loop.old
    assert groups.new.replace("rp < groups; rp++) {  // Confab: four groups, or two", "rp < 4; rp++) {") == groups.old
    assert "i < groups * 4" in store.new and store.new.endswith("    for (; y < nr / 4; y++) {\n")
    assert store.new.index("confab_column_groups<4>()") < store.new.index("confab_column_groups<2>()")
    assert "CONFAB_NOINLINE" in store.new.split("confab_column_groups<4>()")[1]


def test_q4_k_eight_columns_on_avx2_alone_are_the_same_change_to_its_own_loop():
    """CPUs without AVX-512 take the AVX2 copy of the sixteen-column loop: the same three changes."""
    loop, groups, store = (llama_patches.Q4_K_EIGHT_COLUMNS_AVX2_LOOP, llama_patches.Q4_K_EIGHT_COLUMNS_AVX2_GROUPS,
                           llama_patches.Q4_K_EIGHT_COLUMNS_AVX2_STORE)
    assert all(p in llama_patches.PATCHES for p in (loop, groups, store))
    assert loop.old.startswith("#endif //AVX512F\n") and "constexpr int groups" in loop.new
    assert groups.new.replace("rp < groups; rp++) {  // Confab: four groups, or two", "rp < 4; rp++) {") == groups.old
    assert "_mm256_storeu_ps" in store.new and "i < groups * 4" in store.new
    assert store.new.index("confab_column_groups<4>()") < store.new.index("confab_column_groups<2>()")


def test_q4_k_vnni_sums_are_compiled_only_for_vnni_and_ggml_s_text_stays_for_every_other_cpu():
    """The sixteen/eight- and four-column loops' integer sums by VNNI where the compiler targets it;
    without VNNI (AVX-512 before Ice Lake / Zen 4) ggml's own text, unchanged, in the #else branch
    (tests/engine/test_llamacpp_kernels.py: the same floats either way, bit for bit)."""
    for patch in (llama_patches.Q4_K_VNNI_COLUMN_GROUPS, llama_patches.Q4_K_VNNI_FOUR_COLUMNS):
        assert patch in llama_patches.PATCHES and patch.path.endswith("arch/x86/repack.cpp")
        vnni, rest = patch.new.split("#else\n")
        assert vnni.startswith("#if defined(__AVX512VNNI__)\n") and rest == patch.old + "#endif  // Confab: __AVX512VNNI__\n"
        assert vnni.count("_mm512_dpbusd_epi32(") == 8 * 8, "eight sums of eight products each"
        assert vnni.count("_mm512_mullo_epi32(") == 8 and "_mm512_maddubs_epi16" not in vnni
    assert llama_patches.Q4_K_VNNI_COLUMN_GROUPS.old.startswith(" " * 24 + "// The values")
    assert llama_patches.Q4_K_VNNI_FOUR_COLUMNS.old.startswith(" " * 20 + "// The values")
