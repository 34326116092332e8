"""Confab's changes to the vendored llama.cpp for k-quant weights (Q4_K, Q6_K: a Q4_K_M file, what most
downloaded GGUFs are); packaging/llama_patches.py has the others and the list of all.

A fix of batch invariance in Q4_K: ggml repacks
Q4_K weights and multiplies four columns at a time, the rest one at a time, and the two kernels
scaled the integer sums into floats at different points (each pair of sub-blocks against each super
block), so a row's logits depended on how many rows its step had (a tiny Q4_K/Q6_K model: 1.39
apart). The one-column kernel now scales as the four-column one does: bit for bit the same.
Then Q6_K, the rest of a Q4_K_M file (its output layer and half its value and down projections),
two rows by two or four columns on x86, each sum as the one-column path's: a 1.7B Q4_K_M model's
prompts read 1.04-1.08× faster (`llama-batched-bench`, 8×64 tokens, alternated, two runs each);
its 8-row decoding did not move beyond this machine's noise (39.6-41.5 tok/s either way).
And ggml's repacked Q4_K product takes eight columns in one pass where eight are left (it took
sixteen, then four at a time, unpacking the weights once per four), in its AVX-512 loop and in its
AVX2 one: eight sessions decoding a 1.7B Q4_K_M model together 1.13-1.16× faster on AVX-512 and
1.07-1.16× on an AVX2-only build (`llama-batched-bench`, alternated, two runs each), one and four
sessions and prompt reading unchanged; the same floats, bit for bit
(tests/engine/test_llamacpp_kernels.py).

Only the standard library: bootstrap.py imports this before anything is installed.
"""

from __future__ import annotations

from llama_patch import Patch, two_rows_on_avx2


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

Q4_K_EIGHT_COLUMNS_TAG = Patch(
    "ggml/src/ggml-cpu/arch/x86/repack.cpp",
    old="""void ggml_gemm_q4_K_8x8_q8_K(int n, float * GGML_RESTRICT s, size_t bs, const void * GGML_RESTRICT vx, const void * GGML_RESTRICT vy, int nr, int nc) {
""",
    new="""// Confab: a column-group count known at compile time, so that the loop over groups unrolls
template <int N> struct confab_column_groups { static constexpr int value = N; };
#if defined(__GNUC__)
#define CONFAB_NOINLINE __attribute__((noinline))
#define CONFAB_INLINE __attribute__((always_inline))
#else
#define CONFAB_NOINLINE
#define CONFAB_INLINE
#endif

void ggml_gemm_q4_K_8x8_q8_K(int n, float * GGML_RESTRICT s, size_t bs, const void * GGML_RESTRICT vx, const void * GGML_RESTRICT vy, int nr, int nc) {
""")

Q4_K_EIGHT_COLUMNS_LOOP = Patch(
    "ggml/src/ggml-cpu/arch/x86/repack.cpp",
    old="""    const __m512i m4bexpanded = _mm512_set1_epi8(0x0F);
    //Take group of four block_q8_Kx4 structures at each pass of the loop and perform dot product operation
    for (; y < anr / 4; y += 4) {

        const block_q8_Kx4 * a_ptrs[4];

        a_ptrs[0] = a_ptr_start + (y * nb);
        for (int i = 0; i < 3; ++i) {
            a_ptrs[i + 1] = a_ptrs[i] + nb;
        }
""",
    new="""    const __m512i m4bexpanded = _mm512_set1_epi8(0x0F);
    // Confab: this loop takes sixteen columns (four groups of four) at a time; it now also takes
    // eight (two groups) where eight are left, instead of the four-column loop below, which unpacks
    // each weight once per four: eight columns of a 8,192 x 2,048 layer took 2.25 ms, not 2.89.
    // Each group's sums take the same operations as before: the same floats, bit for bit.
    // (no captures: what it reads comes in as arguments of the names the loop uses; sixteen columns
    // inlined here, eight in a function of its own, so the loops compile as they did in place)
    const auto columns_pass = [](auto group_count, int64_t y, const int64_t y_end, const int nb, const int64_t b_nb,
            const int anc, const block_q8_Kx4 * a_ptr_start, const block_q4_Kx8 * b_ptr_start,
            float * GGML_RESTRICT s, const size_t bs, const __m512i m4bexpanded,
            const __m256i requiredOrder) CONFAB_INLINE -> int64_t {
    constexpr int groups = decltype(group_count)::value;
    for (; y + groups <= y_end; y += groups) {

        const block_q8_Kx4 * a_ptrs[4];

        a_ptrs[0] = a_ptr_start + (y * nb);
        for (int i = 0; i < groups - 1; ++i) {
            a_ptrs[i + 1] = a_ptrs[i] + nb;
        }
""")

Q4_K_EIGHT_COLUMNS_GROUPS = Patch(
    "ggml/src/ggml-cpu/arch/x86/repack.cpp",
    old="""                    const __m512i scale_2367ABEF_1 = _mm512_shuffle_epi32(scales_1, (_MM_PERM_ENUM)238);

                    for (int rp = 0; rp < 4; rp++) {
""",
    new="""                    const __m512i scale_2367ABEF_1 = _mm512_shuffle_epi32(scales_1, (_MM_PERM_ENUM)238);

                    for (int rp = 0; rp < groups; rp++) {  // Confab: four groups, or two
""")

Q4_K_EIGHT_COLUMNS_STORE = Patch(
    "ggml/src/ggml-cpu/arch/x86/repack.cpp",
    old="""            for (int i = 0; i < 16; i++) {
                _mm512_storeu_ps((float * )(s + ((y * 4 + i) * bs + x * 8)), _mm512_sub_ps(acc_rows[i], acc_min_rows[i]));
            }
        }
    }

    for (; y < nr / 4; y++) {
""",
    new="""            for (int i = 0; i < groups * 4; i++) {  // Confab: the columns this pass took
                _mm512_storeu_ps((float * )(s + ((y * 4 + i) * bs + x * 8)), _mm512_sub_ps(acc_rows[i], acc_min_rows[i]));
            }
        }
    }
    return y;
    };
    // Confab: sixteen columns at a time, then eight where eight are left
    y = columns_pass(confab_column_groups<4>(), y, anr / 4, nb, b_nb, anc, a_ptr_start, b_ptr_start, s, bs,
                     m4bexpanded, requiredOrder);
    const auto eight_columns = [&]() CONFAB_NOINLINE -> int64_t {
        return columns_pass(confab_column_groups<2>(), y, (nr - nr % 8) / 4, nb, b_nb, anc, a_ptr_start,
                            b_ptr_start, s, bs, m4bexpanded, requiredOrder);
    };
    y = eight_columns();

    for (; y < nr / 4; y++) {
""")

Q4_K_EIGHT_COLUMNS_AVX2_LOOP = Patch(
    "ggml/src/ggml-cpu/arch/x86/repack.cpp",
    old="""#endif //AVX512F

    // Take group of four block_q8_Kx4 structures at each pass of the loop and perform dot product operation
    for (; y < anr / 4; y += 4) {

        const block_q8_Kx4 * a_ptrs[4];

        a_ptrs[0] = a_ptr_start + (y * nb);
        for (int i = 0; i < 3; ++i) {
            a_ptrs[i + 1] = a_ptrs[i] + nb;
        }

        // Take group of eight block_q4_kx8 structures at each pass of the loop and perform dot product operation
""",
    new="""#endif //AVX512F

    // Confab: the same eight-column pass on AVX2 alone (see the AVX-512 loop above), for CPUs without
    // AVX-512: sixteen columns a pass inlined where the loop was, eight in a function of its own.
    const auto columns_pass_avx2 = [](auto group_count, int64_t y, const int64_t y_end, const int nb,
            const int64_t b_nb, const int64_t xstart, const int nc, const block_q8_Kx4 * a_ptr_start,
            const block_q4_Kx8 * b_ptr_start, float * GGML_RESTRICT s, const size_t bs, const __m256i m4b,
            const __m256i requiredOrder) CONFAB_INLINE -> int64_t {
    constexpr int groups = decltype(group_count)::value;
    for (; y + groups <= y_end; y += groups) {

        const block_q8_Kx4 * a_ptrs[4];

        a_ptrs[0] = a_ptr_start + (y * nb);
        for (int i = 0; i < groups - 1; ++i) {
            a_ptrs[i + 1] = a_ptrs[i] + nb;
        }

        // Take group of eight block_q4_kx8 structures at each pass of the loop and perform dot product operation
""")

Q4_K_EIGHT_COLUMNS_AVX2_GROUPS = Patch(
    "ggml/src/ggml-cpu/arch/x86/repack.cpp",
    old="""                    const __m256i scale_2367_1 = _mm256_shuffle_epi32(scales_1, 238);

                    for (int rp = 0; rp < 4; rp++) {
""",
    new="""                    const __m256i scale_2367_1 = _mm256_shuffle_epi32(scales_1, 238);

                    for (int rp = 0; rp < groups; rp++) {  // Confab: four groups, or two
""")

Q4_K_EIGHT_COLUMNS_AVX2_STORE = Patch(
    "ggml/src/ggml-cpu/arch/x86/repack.cpp",
    old="""            for (int i = 0; i < 16; i++) {
                _mm256_storeu_ps((float * )(s + ((y * 4 + i) * bs + x * 8)), _mm256_sub_ps(acc_rows[i], acc_min_rows[i]));
            }
        }
    }
    for (; y < nr / 4; y++) {

        const block_q8_Kx4 * a_ptr = a_ptr_start + (y * nb);

        for (int64_t x = xstart; x < nc / 8; x++) {
""",
    new="""            for (int i = 0; i < groups * 4; i++) {  // Confab: the columns this pass took
                _mm256_storeu_ps((float * )(s + ((y * 4 + i) * bs + x * 8)), _mm256_sub_ps(acc_rows[i], acc_min_rows[i]));
            }
        }
    }
    return y;
    };
    // Confab: sixteen columns at a time, then eight where eight are left
    y = columns_pass_avx2(confab_column_groups<4>(), y, anr / 4, nb, b_nb, xstart, nc, a_ptr_start, b_ptr_start,
                          s, bs, m4b, requiredOrder);
    const auto eight_columns_avx2 = [&]() CONFAB_NOINLINE -> int64_t {
        return columns_pass_avx2(confab_column_groups<2>(), y, (nr - nr % 8) / 4, nb, b_nb, xstart, nc,
                                 a_ptr_start, b_ptr_start, s, bs, m4b, requiredOrder);
    };
    y = eight_columns_avx2();
    for (; y < nr / 4; y++) {

        const block_q8_Kx4 * a_ptr = a_ptr_start + (y * nb);

        for (int64_t x = xstart; x < nc / 8; x++) {
""")
