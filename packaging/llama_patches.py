"""Confab's changes to the llama.cpp that llama-cpp-python's pinned sdist vendors: the text each one
replaces and what it puts there (packaging/llama_source.py applies them).

Why a change to a library at all: llama.cpp's CPU flash attention walks every cell of the K/V pool
for every row and head, converting and comparing each masked cell's mask value on its own. Confab
keeps all conversations in one shared pool (engine/backends/llamacpp_context.py), so most cells a row
walks past belong to other sessions: 8 sessions of 300 tokens decoded 12 % slower than llama.cpp's
per-sequence streams, and 38 % slower with 6,400 idle cells beside them (2 cores, AMD EPYC, in one
process, steps alternated). Skipping runs of masked cells four at a time brings both to the speed
of the streams (1.00-1.02) and leaves every sum as it was: the cells skipped are exactly the ones
skipped before (-inf is one bit pattern in float16). No release of llama.cpp does this on the CPU.

And the dot products of Q4_1 and Q8_0 weights (the bundled model's formats) two rows by two columns
on x86 with AVX2, as llama.cpp already does on ARM: a step of many rows (eight conversations at once,
a prompt being read) computed each weight row against each column on its own, unpacking the same
weights again for every column. Bundled model, 2-core AMD EPYC, `llama-batched-bench`, alternated:
8-row decoding 1.08-1.33× (median 1.2), prompt reading 1.2-1.46×; a Q8_0 file 1.12-1.38× and
1.36-1.42×; one row unchanged (it takes the one-column path, as does any odd count). llama.cpp's own
fast path for many rows (llamafile's tinyBLAS) stays off: it sums in another order than one row does.
Each of the four sums is computed exactly as the one-column path computes it, so a row's logits do
not depend on its neighbours (tests/engine/test_llamacpp_rows.py, bit for bit). ggml took the
one-column path for a whole product whose column count was odd (a prompt of 127 tokens, 8 sessions
and one draft); on x86 an odd count now takes pairs, then one column: 7 and 9 rows decode 1.19× and
1.22×, a 127-token prompt reads 1.5-2×. Then Q4_1 two rows by four columns, where a block of
columns has four left: each row's nibbles unpacked once for four sums (same operations per sum);
`llama-batched-bench` 8×300 tokens, alternated with the two-by-two build, five runs each: 8-row
decoding 220-248 tok/s against 167-217 (medians 241 and 198), prompt reading 433-481 against 319-386.

The k-quant changes (Q4_K, Q6_K: most downloaded GGUFs): packaging/llama_patches_kquants.py, and
Q4_K's integer sums by AVX512-VNNI where the CPU has it: packaging/llama_patches_vnni.py.

Only the standard library: bootstrap.py imports this before anything is installed.
"""

from __future__ import annotations

import hashlib

from llama_patch import Patch, two_rows_on_avx2
from llama_patches_kquants import (Q4_K_EIGHT_COLUMNS_AVX2_GROUPS, Q4_K_EIGHT_COLUMNS_AVX2_LOOP,
                                   Q4_K_EIGHT_COLUMNS_AVX2_STORE, Q4_K_EIGHT_COLUMNS_GROUPS,
                                   Q4_K_EIGHT_COLUMNS_LOOP, Q4_K_EIGHT_COLUMNS_STORE, Q4_K_EIGHT_COLUMNS_TAG,
                                   Q4_K_ONE_COLUMN_AS_FOUR, Q6_K_TWO_ROWS, Q6_K_TWO_ROWS_ON_AVX2)
from llama_patches_vnni import Q4_K_VNNI_COLUMN_GROUPS, Q4_K_VNNI_FOUR_COLUMNS

SKIP_MASKED_RUNS = Patch(
    "ggml/src/ggml-cpu/ops.cpp",
    old="""        for (int64_t ic = 0; ic < nek1; ++ic) {
            const float mv = mp ? slope*GGML_CPU_FP16_TO_FP32(mp[ic]) : 0.0f;
            if (mv == -INFINITY) {
                continue;
            }
""",
    new="""        for (int64_t ic = 0; ic < nek1; ++ic) {
            if (mp && mp[ic] == 0xFC00) {
                // Confab: a masked cell (-inf is 0xFC00 in f16) starts a run: skip to its end four
                // cells at a time instead of converting each. In a K/V pool shared by many
                // sequences most cells a row walks past are masked; an unmasked cell costs one
                // comparison more. The cells skipped are exactly the ones the check below skips.
                int64_t end = ic + 1;
                while (end + 4 <= nek1) {
                    uint64_t w;
                    memcpy(&w, mp + end, sizeof(w));
                    if (w != 0xFC00FC00FC00FC00ull) {
                        break;
                    }
                    end += 4;
                }
                while (end < nek1 && mp[end] == 0xFC00) {
                    ++end;
                }
                ic = end - 1;
                continue;
            }
            const float mv = mp ? slope*GGML_CPU_FP16_TO_FP32(mp[ic]) : 0.0f;
            if (mv == -INFINITY) {
                continue;
            }
""")


Q4_1_TWO_BY_TWO = Patch(
    "ggml/src/ggml-cpu/arch/x86/quants.c",
    old="""    assert(n % qk == 0);
    assert(nrc == 1);
    UNUSED(nrc);
    UNUSED(bx);
    UNUSED(by);
    UNUSED(bs);

    const block_q4_1 * GGML_RESTRICT x = vx;
    const block_q8_1 * GGML_RESTRICT y = vy;

    int ib = 0;
""",
    new="""    assert(n % qk == 0);
    UNUSED(nrc);
    UNUSED(bx);
    UNUSED(by);
    UNUSED(bs);

    const block_q4_1 * GGML_RESTRICT x = vx;
    const block_q8_1 * GGML_RESTRICT y = vy;

#if defined(__AVX2__)
    if (nrc == 4) {
        // Confab: two rows by four columns (a count only ggml-cpu.c's Confab tiling asks for, on
        // plain products of Q4_1 weights): each row's nibbles unpacked once for four sums, not two.
        // Each sum is computed exactly as the one-column path below computes it.
        const block_q4_1 * GGML_RESTRICT x1 = (const block_q4_1 *) ((const uint8_t *) vx + bx);
        const block_q8_1 * GGML_RESTRICT yc[4];
        __m256 acc0[4];
        __m256 acc1[4];
        float summs0[4];
        float summs1[4];
        for (int c = 0; c < 4; ++c) {
            yc[c] = (const block_q8_1 *) ((const uint8_t *) vy + c * by);
            acc0[c] = _mm256_setzero_ps();
            acc1[c] = _mm256_setzero_ps();
            summs0[c] = 0;
            summs1[c] = 0;
        }
        for (int i = 0; i < nb; ++i) {
            const float mx0 = GGML_CPU_FP16_TO_FP32(x[i].m);
            const float mx1 = GGML_CPU_FP16_TO_FP32(x1[i].m);
            const __m256 dx0v = _mm256_set1_ps(GGML_CPU_FP16_TO_FP32(x[i].d));
            const __m256 dx1v = _mm256_set1_ps(GGML_CPU_FP16_TO_FP32(x1[i].d));
            const __m256i qx0 = bytes_from_nibbles_32(x[i].qs);
            const __m256i qx1 = bytes_from_nibbles_32(x1[i].qs);
            for (int c = 0; c < 4; ++c) {
                const float sy = GGML_CPU_FP16_TO_FP32(yc[c][i].s);
                summs0[c] += mx0 * sy;
                summs1[c] += mx1 * sy;
                const __m256 dyv = _mm256_set1_ps(GGML_CPU_FP16_TO_FP32(yc[c][i].d));
                const __m256i qy = _mm256_loadu_si256((const __m256i *) yc[c][i].qs);
                acc0[c] = _mm256_fmadd_ps(_mm256_mul_ps(dx0v, dyv), mul_sum_us8_pairs_float(qx0, qy), acc0[c]);
                acc1[c] = _mm256_fmadd_ps(_mm256_mul_ps(dx1v, dyv), mul_sum_us8_pairs_float(qx1, qy), acc1[c]);
            }
        }
        for (int c = 0; c < 4; ++c) {
            s[c * bs] = hsum_float_8(acc0[c]) + summs0[c];
            s[c * bs + 1] = hsum_float_8(acc1[c]) + summs1[c];
        }
        return;
    }
    if (nrc == 2) {
        // Confab: two rows of weights by two columns of activations, as the ARM build does with
        // i8mm: each row's nibbles are unpacked and each column's bytes loaded once for two sums,
        // not twice. Each of the four sums is computed exactly as the one-column path below
        // computes it (the same operations in the same order), so a row's result does not depend
        // on how many others share its batch.
        const block_q4_1 * GGML_RESTRICT x1 = (const block_q4_1 *) ((const uint8_t *) vx + bx);
        const block_q8_1 * GGML_RESTRICT y1 = (const block_q8_1 *) ((const uint8_t *) vy + by);
        __m256 acc00 = _mm256_setzero_ps();
        __m256 acc10 = _mm256_setzero_ps();
        __m256 acc01 = _mm256_setzero_ps();
        __m256 acc11 = _mm256_setzero_ps();
        float summs00 = 0, summs10 = 0, summs01 = 0, summs11 = 0;
        for (int i = 0; i < nb; ++i) {
            const float dx0 = GGML_CPU_FP16_TO_FP32(x[i].d);
            const float dx1 = GGML_CPU_FP16_TO_FP32(x1[i].d);
            const float dy0 = GGML_CPU_FP16_TO_FP32(y[i].d);
            const float dy1 = GGML_CPU_FP16_TO_FP32(y1[i].d);
            summs00 += GGML_CPU_FP16_TO_FP32(x[i].m) * GGML_CPU_FP16_TO_FP32(y[i].s);
            summs10 += GGML_CPU_FP16_TO_FP32(x1[i].m) * GGML_CPU_FP16_TO_FP32(y[i].s);
            summs01 += GGML_CPU_FP16_TO_FP32(x[i].m) * GGML_CPU_FP16_TO_FP32(y1[i].s);
            summs11 += GGML_CPU_FP16_TO_FP32(x1[i].m) * GGML_CPU_FP16_TO_FP32(y1[i].s);
            const __m256 dx0v = _mm256_set1_ps(dx0);
            const __m256 dx1v = _mm256_set1_ps(dx1);
            const __m256 dy0v = _mm256_set1_ps(dy0);
            const __m256 dy1v = _mm256_set1_ps(dy1);
            const __m256i qx0 = bytes_from_nibbles_32(x[i].qs);
            const __m256i qx1 = bytes_from_nibbles_32(x1[i].qs);
            const __m256i qy0 = _mm256_loadu_si256((const __m256i *) y[i].qs);
            const __m256i qy1 = _mm256_loadu_si256((const __m256i *) y1[i].qs);
            acc00 = _mm256_fmadd_ps(_mm256_mul_ps(dx0v, dy0v), mul_sum_us8_pairs_float(qx0, qy0), acc00);
            acc10 = _mm256_fmadd_ps(_mm256_mul_ps(dx1v, dy0v), mul_sum_us8_pairs_float(qx1, qy0), acc10);
            acc01 = _mm256_fmadd_ps(_mm256_mul_ps(dx0v, dy1v), mul_sum_us8_pairs_float(qx0, qy1), acc01);
            acc11 = _mm256_fmadd_ps(_mm256_mul_ps(dx1v, dy1v), mul_sum_us8_pairs_float(qx1, qy1), acc11);
        }
        s[0] = hsum_float_8(acc00) + summs00;
        s[1] = hsum_float_8(acc10) + summs10;
        s[bs] = hsum_float_8(acc01) + summs01;
        s[bs + 1] = hsum_float_8(acc11) + summs11;
        return;
    }
#endif
    assert(nrc == 1);

    int ib = 0;
""")

Q4_1_TWO_ROWS_ON_AVX2 = two_rows_on_avx2("ggml_vec_dot_q4_1_q8_1", "GGML_TYPE_Q8_1")

Q8_0_TWO_BY_TWO = Patch(
    "ggml/src/ggml-cpu/arch/x86/quants.c",
    old="""    assert(n % qk == 0);
    assert(nrc == 1);
    UNUSED(nrc);
    UNUSED(bx);
    UNUSED(by);
    UNUSED(bs);

    const block_q8_0 * GGML_RESTRICT x = vx;
    const block_q8_0 * GGML_RESTRICT y = vy;

    int ib = 0;
    float sumf = 0;
""",
    new="""    assert(n % qk == 0);
    UNUSED(nrc);
    UNUSED(bx);
    UNUSED(by);
    UNUSED(bs);

    const block_q8_0 * GGML_RESTRICT x = vx;
    const block_q8_0 * GGML_RESTRICT y = vy;

#if defined(__AVX2__)
    if (nrc == 2) {
        // Confab: two rows by two columns, each sum exactly as the one-column path computes it
        // (see ggml_vec_dot_q4_1_q8_1): each block's bytes are loaded once for two sums.
        const block_q8_0 * GGML_RESTRICT x1 = (const block_q8_0 *) ((const uint8_t *) vx + bx);
        const block_q8_0 * GGML_RESTRICT y1 = (const block_q8_0 *) ((const uint8_t *) vy + by);
        __m256 acc00 = _mm256_setzero_ps();
        __m256 acc10 = _mm256_setzero_ps();
        __m256 acc01 = _mm256_setzero_ps();
        __m256 acc11 = _mm256_setzero_ps();
        for (int i = 0; i < nb; ++i) {
            const float dx0 = GGML_CPU_FP16_TO_FP32(x[i].d);
            const float dx1 = GGML_CPU_FP16_TO_FP32(x1[i].d);
            const float dy0 = GGML_CPU_FP16_TO_FP32(y[i].d);
            const float dy1 = GGML_CPU_FP16_TO_FP32(y1[i].d);
            const __m256i qx0 = _mm256_loadu_si256((const __m256i *) x[i].qs);
            const __m256i qx1 = _mm256_loadu_si256((const __m256i *) x1[i].qs);
            const __m256i qy0 = _mm256_loadu_si256((const __m256i *) y[i].qs);
            const __m256i qy1 = _mm256_loadu_si256((const __m256i *) y1[i].qs);
            acc00 = _mm256_fmadd_ps(_mm256_set1_ps(dx0 * dy0), mul_sum_i8_pairs_float(qx0, qy0), acc00);
            acc10 = _mm256_fmadd_ps(_mm256_set1_ps(dx1 * dy0), mul_sum_i8_pairs_float(qx1, qy0), acc10);
            acc01 = _mm256_fmadd_ps(_mm256_set1_ps(dx0 * dy1), mul_sum_i8_pairs_float(qx0, qy1), acc01);
            acc11 = _mm256_fmadd_ps(_mm256_set1_ps(dx1 * dy1), mul_sum_i8_pairs_float(qx1, qy1), acc11);
        }
        s[0] = hsum_float_8(acc00);
        s[1] = hsum_float_8(acc10);
        s[bs] = hsum_float_8(acc01);
        s[bs + 1] = hsum_float_8(acc11);
        return;
    }
#endif
    assert(nrc == 1);

    int ib = 0;
    float sumf = 0;
""")

Q8_0_TWO_ROWS_ON_AVX2 = two_rows_on_avx2("ggml_vec_dot_q8_0_q8_0", "GGML_TYPE_Q8_0")

ODD_COLUMNS_TWO_BY_TWO = Patch(
    "ggml/src/ggml-cpu/ggml-cpu.c",
    old="""        if ((nr0 % 2 != 0) || (ne11 % 2 != 0) || ((ir0_end - ir0_start) % 2 != 0) || ((ir1_end - ir1_start) % 2 != 0)) {
            num_rows_per_vec_dot = 1;
        }
        ggml_compute_forward_mul_mat_one_chunk(params, dst, src0->type, num_rows_per_vec_dot, ir0_start, ir0_end, ir1_start, ir1_end);
""",
    new="""#if defined(__AVX2__) && !defined(__ARM_FEATURE_MATMUL_INT8)
        // Confab: in a plain 2-D product (no broadcast dims, so a pair of columns never crosses
        // one) an odd count of columns takes the two-column kernel for all but its last column,
        // which takes the one-column path: on x86 both give each sum by the same operations, and a
        // step of 9 rows (8 sessions, one with a draft) no longer drops to one column at a time.
        if (num_rows_per_vec_dot == 2 && ne12 == 1 && ne13 == 1 && nr0 % 2 == 0 && (ir0_end - ir0_start) % 2 == 0
                && ir1_end - ir1_start > 1) {
            const int64_t ir1_pairs_end = ir1_start + (ir1_end - ir1_start) / 2 * 2;
            ggml_compute_forward_mul_mat_one_chunk(params, dst, src0->type, 2, ir0_start, ir0_end, ir1_start, ir1_pairs_end);
            if (ir1_pairs_end < ir1_end) {
                ggml_compute_forward_mul_mat_one_chunk(params, dst, src0->type, 1, ir0_start, ir0_end, ir1_pairs_end, ir1_end);
            }
        } else
#endif
        {
        if ((nr0 % 2 != 0) || (ne11 % 2 != 0) || ((ir0_end - ir0_start) % 2 != 0) || ((ir1_end - ir1_start) % 2 != 0)) {
            num_rows_per_vec_dot = 1;
        }
        ggml_compute_forward_mul_mat_one_chunk(params, dst, src0->type, num_rows_per_vec_dot, ir0_start, ir0_end, ir1_start, ir1_end);
        }
""")

FOUR_COLUMNS = Patch(
    "ggml/src/ggml-cpu/ggml-cpu.c",
    old="""    float tmp[32];

    for (int64_t iir1 = ir1_start; iir1 < ir1_end; iir1 += blck_1) {
        for (int64_t iir0 = ir0_start; iir0 < ir0_end; iir0 += blck_0) {
            for (int64_t ir1 = iir1; ir1 < iir1 + blck_1 && ir1 < ir1_end; ir1 += num_rows_per_vec_dot) {
""",
    new="""    float tmp[64];  // Confab: up to four columns of 16 (the x86 Q4_1 and Q6_K two-by-four dots)

#if defined(__AVX2__) && !defined(__ARM_FEATURE_MATMUL_INT8)
    // Confab: in a plain 2-D product of Q4_1 or Q6_K weights the two-row dot takes four columns at a
    // time where a block has four left (arch/x86/quants.c); each sum is as the one-column path's.
    const bool four_columns = (type == GGML_TYPE_Q4_1 || type == GGML_TYPE_Q6_K) && num_rows_per_vec_dot == 2
        && ne12 == 1 && ne13 == 1;
#else
    const bool four_columns = false;
#endif
    int64_t columns = num_rows_per_vec_dot;

    for (int64_t iir1 = ir1_start; iir1 < ir1_end; iir1 += blck_1) {
        for (int64_t iir0 = ir0_start; iir0 < ir0_end; iir0 += blck_0) {
            for (int64_t ir1 = iir1; ir1 < iir1 + blck_1 && ir1 < ir1_end; ir1 += columns) {
                columns = four_columns && ir1 + 4 <= MIN(iir1 + blck_1, ir1_end) ? 4 : num_rows_per_vec_dot;
""")

FOUR_COLUMNS_CALL = Patch(
    "ggml/src/ggml-cpu/ggml-cpu.c",
    old="""src1_col, (num_rows_per_vec_dot > 1 ? src1_col_stride : 0), num_rows_per_vec_dot);
                }

                for (int cn = 0; cn < num_rows_per_vec_dot; ++cn) {""",
    new="""src1_col, (num_rows_per_vec_dot > 1 ? src1_col_stride : 0), (int) columns);
                }

                for (int cn = 0; cn < columns; ++cn) {""")

PATCHES: tuple[Patch, ...] = (SKIP_MASKED_RUNS, Q4_1_TWO_BY_TWO, Q4_1_TWO_ROWS_ON_AVX2, Q8_0_TWO_BY_TWO,
                              Q8_0_TWO_ROWS_ON_AVX2, ODD_COLUMNS_TWO_BY_TWO, FOUR_COLUMNS,
                              FOUR_COLUMNS_CALL, Q4_K_ONE_COLUMN_AS_FOUR, Q6_K_TWO_ROWS,
                              Q6_K_TWO_ROWS_ON_AVX2, Q4_K_EIGHT_COLUMNS_TAG, Q4_K_EIGHT_COLUMNS_LOOP,
                              Q4_K_EIGHT_COLUMNS_GROUPS, Q4_K_EIGHT_COLUMNS_STORE, Q4_K_EIGHT_COLUMNS_AVX2_LOOP,
                              Q4_K_EIGHT_COLUMNS_AVX2_GROUPS, Q4_K_EIGHT_COLUMNS_AVX2_STORE,
                              Q4_K_VNNI_COLUMN_GROUPS, Q4_K_VNNI_FOUR_COLUMNS)
PATCH_ID = hashlib.sha256(repr(PATCHES).encode()).hexdigest()[:12]
"""Changes when the patches do: builds record it, and an installed build without it is rebuilt."""
