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

And one fix of batch invariance in Q4_K, the format of most downloaded GGUFs (Q4_K_M): ggml repacks
Q4_K weights and multiplies four columns at a time, the rest one at a time, and the two kernels
scaled the integer sums into floats at different points (each pair of sub-blocks against each super
block), so a row's logits depended on how many rows its step had (a tiny Q4_K/Q6_K model: 1.39
apart). The one-column kernel now scales as the four-column one does: bit for bit the same.
Then Q6_K, the rest of a Q4_K_M file (its output layer and half its value and down projections),
two rows by two or four columns on x86, each sum as the one-column path's: a 1.7B Q4_K_M model's
prompts read 1.04-1.08× faster (`llama-batched-bench`, 8×64 tokens, alternated, two runs each);
its 8-row decoding did not move beyond this machine's noise (39.6-41.5 tok/s either way).

Only the standard library: bootstrap.py imports this before anything is installed.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass


@dataclass(frozen=True)
class Patch:
    """Replace `old` (found exactly once) with `new` in `path`, relative to the vendored llama.cpp."""
    path: str
    old: str
    new: str


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


def two_rows_on_avx2(dot: str, vec_dot_type: str) -> Patch:
    """ggml's type traits ask `dot` for two rows at a time on x86 with AVX2 too, as on ARM with i8mm:
    only where a kernel patch (`*_TWO_BY_TWO` below) gives it a two-by-two path."""
    head = f"""        .vec_dot                  = {dot},
        .vec_dot_type             = {vec_dot_type},
#if defined (__ARM_FEATURE_MATMUL_INT8)"""
    return Patch("ggml/src/ggml-cpu/ggml-cpu.c", old=head + "\n",
                 new=head + " || defined(__AVX2__)  // Confab: the x86 two-by-two dot (arch/x86/quants.c)\n")


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

Q4_K_ONE_COLUMN_AS_FOUR = Patch(
    "ggml/src/ggml-cpu/arch/x86/repack.cpp",
    old="""                    __m256i q8s_sb = _mm256_shuffle_epi32(q8s, 0);
                    __m256i iacc_min_sb = _mm256_madd_epi16(q8s_sb, mins_01);
                    q8s = _mm256_bsrli_epi128(q8s, 4);

                    // Accumulate for the complete block
                    iacc_b = _mm256_add_epi32(iacc_b, iacc_sb);
                    iacc_min_b = _mm256_add_epi32(iacc_min_b, iacc_min_sb);
                }

                // Multiply-Add with scale values for the complete super block
                acc_row = _mm256_fmadd_ps(_mm256_cvtepi32_ps(iacc_b), _mm256_mul_ps(col_scale_f32, row_scale_f32), acc_row);
                acc_min_rows = _mm256_fmadd_ps(_mm256_cvtepi32_ps(iacc_min_b), _mm256_mul_ps(col_dmin_f32, row_scale_f32), acc_min_rows);
""",
    new="""                    __m256i q8s_sb = _mm256_shuffle_epi32(q8s, 0);
                    __m256i iacc_min_sb = _mm256_madd_epi16(q8s_sb, mins_01);
                    q8s = _mm256_bsrli_epi128(q8s, 4);

                    // Confab: scaled and added to the float sums for each pair of sub-blocks, as
                    // ggml_gemm_q4_K_8x8_q8_K does for four columns, not once per super block: a
                    // column's result no longer depends on whether it came in a group of four
                    // (ggml's repacked product takes the one-column kernel for the rest).
                    acc_row = _mm256_fmadd_ps(_mm256_cvtepi32_ps(iacc_sb), _mm256_mul_ps(col_scale_f32, row_scale_f32), acc_row);
                    acc_min_rows = _mm256_fmadd_ps(_mm256_cvtepi32_ps(iacc_min_sb), _mm256_mul_ps(col_dmin_f32, row_scale_f32), acc_min_rows);
                }
                (void) iacc_b;
                (void) iacc_min_b;
""")

Q6_K_TWO_ROWS = Patch(
    "ggml/src/ggml-cpu/arch/x86/quants.c",
    old="""void ggml_vec_dot_q6_K_q8_K(int n, float * GGML_RESTRICT s, size_t bs, const void * GGML_RESTRICT vx, size_t bx, const void * GGML_RESTRICT vy, size_t by, int nrc) {
    assert(n % QK_K == 0);
    assert(nrc == 1);
    UNUSED(nrc);
""",
    new="""#if defined(__AVX2__)
// Confab: Q6_K weights two rows by `nc` (2 or 4) columns: each row's 6-bit values and scales unpacked
// once for all its columns, each column's -32 offset once for both rows. Each sum takes exactly the
// operations of the one-column path below (integer sums per super block, then one fmadd), so a row's
// result does not depend on how many columns share its call.
static inline __attribute__((always_inline)) void ggml_vec_dot_q6_K_q8_K_two_rows(const int nc, int n,
        float * GGML_RESTRICT s, size_t bs, const void * GGML_RESTRICT vx, size_t bx,
        const void * GGML_RESTRICT vy, size_t by) {
    const block_q6_K * GGML_RESTRICT x[2] = { (const block_q6_K *) vx, (const block_q6_K *) ((const uint8_t *) vx + bx) };
    const block_q8_K * GGML_RESTRICT y[4];
    for (int c = 0; c < nc; ++c) {
        y[c] = (const block_q8_K *) ((const uint8_t *) vy + c * by);
    }
    const int nb = n / QK_K;
    const __m256i m4 = _mm256_set1_epi8(0xF);
    const __m256i m2 = _mm256_set1_epi8(3);
    const __m256i m32s = _mm256_set1_epi8(32);
    __m256 acc[2][4];
    for (int r = 0; r < 2; ++r) {
        for (int c = 0; c < nc; ++c) {
            acc[r][c] = _mm256_setzero_ps();
        }
    }
    for (int i = 0; i < nb; ++i) {
        __m256i sumi[2][4];
        for (int r = 0; r < 2; ++r) {
            for (int c = 0; c < nc; ++c) {
                sumi[r][c] = _mm256_setzero_si256();
            }
        }
        for (int j = 0; j < QK_K/128; ++j) {
            // one group of 32 values at a time, so that the sums, two rows' bits and one column's
            // bytes stay in registers (16 on AVX2 alone, 32 with AVX-512)
            __m128i scales[2];
            __m256i lo1[2], lo2[2], hi[2];
            for (int r = 0; r < 2; ++r) {
                scales[r] = _mm_loadu_si128((const __m128i *) x[r][i].scales);
                lo1[r] = _mm256_loadu_si256((const __m256i *) (x[r][i].ql + 64 * j));
                lo2[r] = _mm256_loadu_si256((const __m256i *) (x[r][i].ql + 64 * j + 32));
                hi[r] = _mm256_loadu_si256((const __m256i *) (x[r][i].qh + 32 * j));
            }
            for (int k = 0; k < 4; ++k) {
                __m256i q6[2];
                __m256i sc[2];
                for (int r = 0; r < 2; ++r) {
                    const __m256i lo = k % 2 == 0 ? lo1[r] : lo2[r];
                    const __m256i low = k < 2 ? _mm256_and_si256(lo, m4) : _mm256_and_si256(_mm256_srli_epi16(lo, 4), m4);
                    const __m256i high = k == 0 ? _mm256_and_si256(hi[r], m2) : _mm256_and_si256(_mm256_srli_epi16(hi[r], 2 * k), m2);
                    q6[r] = _mm256_or_si256(low, _mm256_slli_epi16(high, 4));
                    sc[r] = _mm256_cvtepi8_epi16(_mm_shuffle_epi8(scales[r], get_scale_shuffle(4 * j + k)));
                }
                for (int c = 0; c < nc; ++c) {
                    const __m256i q8 = _mm256_loadu_si256((const __m256i *) (y[c][i].qs + 128 * j + 32 * k));
                    const __m256i q8s = _mm256_maddubs_epi16(m32s, q8);
                    for (int r = 0; r < 2; ++r) {
                        const __m256i p16 = _mm256_sub_epi16(_mm256_maddubs_epi16(q6[r], q8), q8s);
                        sumi[r][c] = _mm256_add_epi32(sumi[r][c], _mm256_madd_epi16(sc[r], p16));
                    }
                }
            }
        }
        for (int r = 0; r < 2; ++r) {
            for (int c = 0; c < nc; ++c) {
                const float d = y[c][i].d * GGML_CPU_FP16_TO_FP32(x[r][i].d);
                acc[r][c] = _mm256_fmadd_ps(_mm256_broadcast_ss(&d), _mm256_cvtepi32_ps(sumi[r][c]), acc[r][c]);
            }
        }
    }
    for (int c = 0; c < nc; ++c) {
        s[c * bs] = hsum_float_8(acc[0][c]);
        s[c * bs + 1] = hsum_float_8(acc[1][c]);
    }
}
#endif

void ggml_vec_dot_q6_K_q8_K(int n, float * GGML_RESTRICT s, size_t bs, const void * GGML_RESTRICT vx, size_t bx, const void * GGML_RESTRICT vy, size_t by, int nrc) {
    assert(n % QK_K == 0);
    UNUSED(nrc);
#if defined(__AVX2__)
    if (nrc == 4) {  // Confab: two rows by four columns (ggml-cpu.c's Confab tiling)
        ggml_vec_dot_q6_K_q8_K_two_rows(4, n, s, bs, vx, bx, vy, by);
        return;
    }
    if (nrc == 2) {  // Confab: two rows by two columns
        ggml_vec_dot_q6_K_q8_K_two_rows(2, n, s, bs, vx, bx, vy, by);
        return;
    }
#endif
    assert(nrc == 1);
""")

Q6_K_TWO_ROWS_ON_AVX2 = two_rows_on_avx2("ggml_vec_dot_q6_K_q8_K", "GGML_TYPE_Q8_K")

PATCHES: tuple[Patch, ...] = (SKIP_MASKED_RUNS, Q4_1_TWO_BY_TWO, Q4_1_TWO_ROWS_ON_AVX2, Q8_0_TWO_BY_TWO,
                              Q8_0_TWO_ROWS_ON_AVX2, ODD_COLUMNS_TWO_BY_TWO, FOUR_COLUMNS,
                              FOUR_COLUMNS_CALL, Q4_K_ONE_COLUMN_AS_FOUR, Q6_K_TWO_ROWS,
                              Q6_K_TWO_ROWS_ON_AVX2)
PATCH_ID = hashlib.sha256(repr(PATCHES).encode()).hexdigest()[:12]
"""Changes when the patches do: builds record it, and an installed build without it is rebuilt."""
