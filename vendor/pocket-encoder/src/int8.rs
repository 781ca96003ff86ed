//! The linear layers as integer products: the bundled 8-bit weights as they are (each 32 of
//! an output's inputs with their own F16 step), each input row rounded to 16 bits as it comes
//! (symmetric, its own scale), the products of each group of 32 summed exactly in 32-bit
//! integers, then scaled back to F32. With AVX2 (detected at run time) 16 products an
//! instruction (`vpmaddwd`, the weights widened to 16 bits as they are read); elsewhere the
//! same integers one at a time, so every target gives the same vectors.
//!
//! Against F32 products this reads a quarter of the weights' bytes (the six layers' are
//! 10.6 MB, which stay in L3, where F32's 42 MB came from memory at every pass).

/// Input values are rounded to within ±32,767: a group's sum of 32 products is at most
/// 32 x 127 x 32,767 < 2^31.
const LIMIT: f32 = 32_767.0;

/// Weights share a step in groups of 32 consecutive inputs, as bundled.
pub(crate) const GROUP: usize = 32;

/// A linear layer's `[outputs, inputs]` weight matrix, 8-bit, in the order the products read
/// it: blocks of 8 outputs, and within a block, for each 2 consecutive inputs, those 2 of each
/// of the 8 outputs (16 bytes, one AVX2 register once widened).
pub(crate) struct Matrix {
    inputs: usize,
    outputs: usize,
    packed: Vec<i8>,
    /// For each block of 8 outputs, for each group of 32 inputs, the 8 outputs' steps.
    steps: Vec<f32>,
    /// Where the integer products have no fast path (no AVX2, or not x86-64: ARM64's NEON
    /// has none here), the weights dequantized, `[inputs, outputs]`, for GEMM's F32 kernels,
    /// as before the integer products: one at a time, the integers were 9x as slow.
    dense: Option<Vec<f32>>,
}

/// Whether this CPU has the integer products' fast path (else [`Matrix::new`] is asked for
/// F32 weights).
pub(crate) fn fast() -> bool {
    #[cfg(target_arch = "x86_64")]
    return std::arch::is_x86_feature_detected!("avx2");
    #[cfg(not(target_arch = "x86_64"))]
    return false;
}

/// Input rows rounded to 16 bits, each with its own scale.
#[derive(Default)]
pub(crate) struct Rows {
    values: Vec<i16>,
    scales: Vec<f32>,
}

impl Matrix {
    /// `values` are `[outputs, inputs]` I8 bytes as bundled, `steps` the scale of each 32 of
    /// them in that order; `outputs` is a multiple of 16, `inputs` of 32.
    /// With `dense`, the products are F32 ones (see [`Matrix::dense`]).
    pub fn new(values: &[u8], steps: &[f32], outputs: usize, inputs: usize, dense: bool) -> Self {
        assert!(outputs.is_multiple_of(16) && inputs.is_multiple_of(GROUP));
        assert!(values.len() == outputs * inputs && steps.len() == values.len() / GROUP);
        let mut packed = Vec::with_capacity(values.len());
        let mut blocked = Vec::with_capacity(steps.len());
        // The integer products' weights, unless F32 ones will run.
        for block in 0..if dense { 0 } else { outputs / 8 } {
            for pair in 0..inputs / 2 {
                for output in block * 8..block * 8 + 8 {
                    let start = output * inputs + pair * 2;
                    packed.extend(values[start..start + 2].iter().map(|&v| v as i8));
                }
            }
            for group in 0..inputs / GROUP {
                for output in block * 8..block * 8 + 8 {
                    blocked.push(steps[output * inputs / GROUP + group]);
                }
            }
        }
        let dense = dense.then(|| {
            let mut transposed = vec![0.0; values.len()];
            for (i, &v) in values.iter().enumerate() {
                let (output, input) = (i / inputs, i % inputs);
                transposed[input * outputs + output] = v as i8 as f32 * steps[i / GROUP];
            }
            transposed
        });
        Self {
            inputs,
            outputs,
            packed,
            steps: blocked,
            dense,
        }
    }

    /// `output[r] = input[r] · weightᵀ + bias`, for `input`'s rows of `inputs` values: integer
    /// products (the rows rounded into `rows`), or F32 ones where those have no fast path.
    pub fn apply(&self, input: &[f32], rows: &mut Rows, bias: &[f32], output: &mut Vec<f32>) {
        let Some(dense) = &self.dense else {
            rows.quantize(input, self.inputs);
            return self.product(rows, bias, output);
        };
        let count = input.len() / self.inputs;
        assert!(input.len() == count * self.inputs && bias.len() == self.outputs);
        output.resize(count * self.outputs, 0.0);
        // SAFETY: contiguous row-major F32 slices of the lengths checked above (input
        // `count x inputs`, weights `inputs x outputs`, output `count x outputs`); the output
        // aliases neither input.
        unsafe {
            gemm::gemm(
                count,
                self.outputs,
                self.inputs,
                output.as_mut_ptr(),
                1,
                self.outputs as isize,
                false,
                input.as_ptr(),
                1,
                self.inputs as isize,
                dense.as_ptr(),
                1,
                self.outputs as isize,
                0.0,
                1.0,
                false,
                false,
                false,
                gemm::Parallelism::None,
            );
        }
        for row in output.chunks_exact_mut(self.outputs) {
            for (value, bias) in row.iter_mut().zip(bias) {
                *value += bias;
            }
        }
    }

    /// `output[r] = rows[r] · weightᵀ + bias`, for `rows` quantized from `inputs`-wide rows.
    pub fn product(&self, rows: &Rows, bias: &[f32], output: &mut Vec<f32>) {
        let count = rows.scales.len();
        assert_eq!(rows.values.len(), count * self.inputs);
        assert_eq!(bias.len(), self.outputs);
        // Every value is written below: no need to zero those already there.
        output.resize(count * self.outputs, 0.0);
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: AVX2 is present (checked just above).
            unsafe { avx2::product(self, rows, bias, output) };
            return;
        }
        self.portable(rows, bias, output);
    }

    /// What the AVX2 path computes, in the same F32 operations, one value at a time.
    fn portable(&self, rows: &Rows, bias: &[f32], output: &mut [f32]) {
        let width = self.inputs;
        let groups = width / GROUP;
        for (r, out) in output.chunks_exact_mut(self.outputs).enumerate() {
            let values = &rows.values[r * width..(r + 1) * width];
            for (block, out) in out.chunks_exact_mut(8).enumerate() {
                let weights = &self.packed[block * 8 * width..(block + 1) * 8 * width];
                let mut totals = [0.0f32; 8];
                for group in 0..groups {
                    let mut sums = [0i32; 8];
                    for pair in group * GROUP / 2..(group + 1) * GROUP / 2 {
                        let x = &values[pair * 2..pair * 2 + 2];
                        let w = &weights[pair * 16..pair * 16 + 16];
                        for (sum, w) in sums.iter_mut().zip(w.chunks_exact(2)) {
                            *sum += x[0] as i32 * w[0] as i32 + x[1] as i32 * w[1] as i32;
                        }
                    }
                    let steps = &self.steps[(block * groups + group) * 8..][..8];
                    for ((total, sum), step) in totals.iter_mut().zip(sums).zip(steps) {
                        *total += sum as f32 * step;
                    }
                }
                let bias = &bias[block * 8..];
                for ((value, total), bias) in out.iter_mut().zip(totals).zip(bias) {
                    *value = total * rows.scales[r] + bias;
                }
            }
        }
    }
}

impl Rows {
    /// Rounds `input`'s rows of `width` values, each to ±32,767 times its own scale.
    pub fn quantize(&mut self, input: &[f32], width: usize) {
        assert!(width.is_multiple_of(GROUP) && input.len().is_multiple_of(width));
        self.values.clear();
        self.values.resize(input.len(), 0);
        self.scales.clear();
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: AVX2 is present (checked just above).
            unsafe { avx2::quantize(self, input, width) };
            return;
        }
        quantize(self, input, width);
    }
}

/// The same F32 operations on every target (no FMA), so that every target's integers agree.
#[inline(always)]
fn quantize(rows: &mut Rows, input: &[f32], width: usize) {
    for (row, values) in input
        .chunks_exact(width)
        .zip(rows.values.chunks_exact_mut(width))
    {
        let max = row.iter().fold(0.0f32, |m, v| m.max(v.abs()));
        let inverse = if max > 0.0 { LIMIT / max } else { 0.0 };
        for (q, &v) in values.iter_mut().zip(row) {
            // Round to nearest, ties to even, without a call (|v · inverse| <= 32,767).
            *q = ((v * inverse + 12_582_912.0) - 12_582_912.0) as i16;
        }
        rows.scales.push(max / LIMIT);
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::{GROUP, Matrix, Rows};
    use std::arch::x86_64::*;

    /// [`super::quantize`] 16 values at a time: the same F32 operations, so the same values.
    #[target_feature(enable = "avx2")]
    pub(super) fn quantize(rows: &mut Rows, input: &[f32], width: usize) {
        let magic = _mm256_set1_ps(12_582_912.0);
        let sign = _mm256_set1_ps(-0.0);
        for (row, values) in input
            .chunks_exact(width)
            .zip(rows.values.chunks_exact_mut(width))
        {
            let (row, values) = (row.as_chunks::<16>().0, values.as_chunks_mut::<16>().0);
            // SAFETY: 16 F32 in and 16 i16 out at a time (unaligned access).
            unsafe {
                let mut top = _mm256_setzero_ps();
                for x in row {
                    let (a, b) = (
                        _mm256_loadu_ps(x.as_ptr()),
                        _mm256_loadu_ps(x.as_ptr().add(8)),
                    );
                    top = _mm256_max_ps(top, _mm256_andnot_ps(sign, a));
                    top = _mm256_max_ps(top, _mm256_andnot_ps(sign, b));
                }
                top = _mm256_max_ps(top, _mm256_permute2f128_ps(top, top, 1));
                top = _mm256_max_ps(top, _mm256_shuffle_ps(top, top, 0b01_00_11_10));
                top = _mm256_max_ps(top, _mm256_shuffle_ps(top, top, 0b10_11_00_01));
                let max = _mm256_cvtss_f32(top);
                let inverse = if max > 0.0 { super::LIMIT / max } else { 0.0 };
                let inverse = _mm256_set1_ps(inverse);
                let round = |x: __m256| {
                    let scaled = _mm256_add_ps(_mm256_mul_ps(x, inverse), magic);
                    _mm256_cvtps_epi32(_mm256_sub_ps(scaled, magic))
                };
                for (x, q) in row.iter().zip(values) {
                    let a = round(_mm256_loadu_ps(x.as_ptr()));
                    let b = round(_mm256_loadu_ps(x.as_ptr().add(8)));
                    // `packs` interleaves the halves' lanes: put them back in order.
                    let packed = _mm256_permute4x64_epi64(_mm256_packs_epi32(a, b), 0b11_01_10_00);
                    _mm256_storeu_si256(q.as_mut_ptr().cast(), packed);
                }
                rows.scales.push(max / super::LIMIT);
            }
        }
    }

    /// 16 outputs at a time, every row passing them (TILE rows at a time): the 16 outputs'
    /// weights (at most 24 KB) stay in L1 while the rows go by.
    #[target_feature(enable = "avx2")]
    pub(super) fn product(matrix: &Matrix, rows: &Rows, bias: &[f32], output: &mut [f32]) {
        let count = rows.scales.len();
        for pair in 0..matrix.outputs / 16 {
            let mut r = 0;
            while r < count {
                // TILE rows at a time, then the rest one by one.
                let tile = if count - r >= TILE { TILE } else { 1 };
                let totals = match tile {
                    TILE => block::<TILE>(matrix, rows, r, pair),
                    _ => widen(block::<1>(matrix, rows, r, pair)),
                };
                let bias: &[f32; 16] = bias[pair * 16..pair * 16 + 16].try_into().unwrap();
                for (i, totals) in totals.iter().take(tile).enumerate() {
                    let start = (r + i) * matrix.outputs + pair * 16;
                    let into: &mut [f32; 16] = (&mut output[start..start + 16]).try_into().unwrap();
                    let scale = _mm256_set1_ps(rows.scales[r + i]);
                    for (half, &total) in totals.iter().enumerate() {
                        // SAFETY: 8 of 16 F32 each (unaligned access).
                        unsafe {
                            let bias = _mm256_loadu_ps(bias.as_ptr().add(half * 8));
                            let value = _mm256_add_ps(_mm256_mul_ps(total, scale), bias);
                            _mm256_storeu_ps(into.as_mut_ptr().add(half * 8), value);
                        }
                    }
                }
                r += tile;
            }
        }
    }

    const TILE: usize = 4;

    #[target_feature(enable = "avx2")]
    #[inline]
    fn widen<const R: usize>(totals: [[__m256; 2]; R]) -> [[__m256; 2]; TILE] {
        let mut all = [[_mm256_setzero_ps(); 2]; TILE];
        all[..R].copy_from_slice(&totals);
        all
    }

    /// R rows (from `first`) times the `pair`-th 16 outputs' weights, as 2 x 8 F32 (before the
    /// rows' scales): each group of 32 inputs summed exactly in `i32`, then scaled by its
    /// step and added.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn block<const R: usize>(
        matrix: &Matrix,
        rows: &Rows,
        first: usize,
        pair: usize,
    ) -> [[__m256; 2]; R] {
        let width = matrix.inputs;
        let groups = width / GROUP;
        let weights = &matrix.packed[pair * 16 * width..(pair + 1) * 16 * width];
        let steps = &matrix.steps[pair * 16 * groups..(pair + 1) * 16 * groups];
        let values = &rows.values[first * width..(first + R) * width];
        let (low, high) = weights.split_at(8 * width);
        let (low_steps, high_steps) = steps.split_at(8 * groups);
        let mut totals = [[_mm256_setzero_ps(); 2]; R];
        for group in 0..groups {
            let mut sums = [[_mm256_setzero_si256(); 2]; R];
            for two in group * GROUP / 2..(group + 1) * GROUP / 2 {
                // SAFETY: `two * 16 + 16 <= 8 * width` bytes of each half of the weights, and
                // `r * width + two * 2 + 2 <= R * width` values of the R rows (the slices'
                // lengths above); unaligned loads throughout.
                unsafe {
                    let w0 = _mm_loadu_si128(low.as_ptr().add(two * 16).cast());
                    let w1 = _mm_loadu_si128(high.as_ptr().add(two * 16).cast());
                    let (w0, w1) = (_mm256_cvtepi8_epi16(w0), _mm256_cvtepi8_epi16(w1));
                    for (r, sums) in sums.iter_mut().enumerate() {
                        let at = r * width + two * 2;
                        let x = values.as_ptr().add(at).cast::<i32>().read_unaligned();
                        // Both inputs of the pair, times each output's two weights, summed.
                        let x = _mm256_set1_epi32(x);
                        sums[0] = _mm256_add_epi32(sums[0], _mm256_madd_epi16(x, w0));
                        sums[1] = _mm256_add_epi32(sums[1], _mm256_madd_epi16(x, w1));
                    }
                }
            }
            // SAFETY: 8 steps at `group * 8` of each half's `8 * groups`.
            let (s0, s1) = unsafe {
                (
                    _mm256_loadu_ps(low_steps.as_ptr().add(group * 8)),
                    _mm256_loadu_ps(high_steps.as_ptr().add(group * 8)),
                )
            };
            for (totals, sums) in totals.iter_mut().zip(sums) {
                for (total, (sum, steps)) in totals.iter_mut().zip(sums.iter().zip([s0, s1])) {
                    let value = _mm256_mul_ps(_mm256_cvtepi32_ps(*sum), steps);
                    *total = _mm256_add_ps(*total, value);
                }
            }
        }
        totals
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_path_gives_the_same_bits_as_exact_integer_sums() {
        let (outputs, inputs, count) = (32, 96, 7);
        let mut seed = 1u64;
        let mut next = || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((seed >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 4.0
        };
        let weight: Vec<f32> = (0..outputs * inputs).map(|_| next()).collect();
        let mut input: Vec<f32> = (0..count * inputs).map(|_| next()).collect();
        // A row of zeros (no scale) and one of a single value (its own step).
        input[inputs..2 * inputs].fill(0.0);
        input[2 * inputs..3 * inputs].fill(0.0);
        input[2 * inputs + 5] = -3.5;
        let bias: Vec<f32> = (0..outputs).map(|_| next()).collect();
        // Weights as the bundled ones are: 8-bit, a step for each 32.
        let mut values = Vec::new();
        let mut steps = Vec::new();
        for group in weight.chunks_exact(GROUP) {
            let max = group.iter().fold(0.0f32, |m, v| m.max(v.abs()));
            steps.push(max / 127.0);
            values.extend(group.iter().map(|v| (v * 127.0 / max).round() as i8 as u8));
        }
        let weight: Vec<f32> = values
            .iter()
            .enumerate()
            .map(|(i, &v)| v as i8 as f32 * steps[i / GROUP])
            .collect();
        let matrix = Matrix::new(&values, &steps, outputs, inputs, false);
        let mut rows = Rows::default();
        rows.quantize(&input, inputs);
        let mut portable = Rows::default();
        portable.values.resize(input.len(), 0);
        quantize(&mut portable, &input, inputs);
        assert_eq!(rows.values, portable.values);
        assert_eq!(rows.scales, portable.scales);
        let mut fast = Vec::new();
        matrix.product(&rows, &bias, &mut fast);
        let mut slow = vec![0.0; count * outputs];
        matrix.portable(&rows, &bias, &mut slow);
        assert_eq!(fast, slow);
        // F32 products where the integer ones have no fast path: the same within rounding.
        let dense = Matrix::new(&values, &steps, outputs, inputs, true);
        let mut floats = Vec::new();
        dense.apply(&input, &mut Rows::default(), &bias, &mut floats);
        for (a, b) in floats.iter().zip(&slow) {
            assert!((a - b).abs() <= 1e-3, "{a} {b}");
        }
        // And close to the F32 product: within 1e-4 of the sum of the terms' magnitudes.
        for r in 0..count {
            for o in 0..outputs {
                let terms = (0..inputs).map(|i| input[r * inputs + i] * weight[o * inputs + i]);
                let exact = terms.clone().sum::<f32>() + bias[o];
                let magnitude = terms.map(f32::abs).sum::<f32>();
                let error = (exact - slow[r * outputs + o]).abs();
                assert!(error <= 1e-4 * magnitude + 1e-6, "{error} of {magnitude}");
            }
        }
    }
}
