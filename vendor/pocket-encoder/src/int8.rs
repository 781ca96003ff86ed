//! The linear layers as 8-bit integer products: weights 8-bit per output channel (requantized
//! once at load from the bundled 8-bit groups of 32), each input row quantized to 8 bits as it
//! comes (symmetric, its own scale), products summed exactly in 32-bit integers, then scaled
//! back to F32. With AVX2 (detected at run time) 32 products an instruction, `vpmaddubsw`;
//! elsewhere the same integers summed one at a time, so every target gives the same vectors.
//!
//! Against F32 products this reads a quarter of the bytes (the six layers' weights are 10.6 MB,
//! which stay in L3, where F32's 42 MB came from memory at every pass) and does twice the
//! products an instruction.

/// Weights and activations stay within ±127, so that `vpmaddubsw`'s pairs (at most
/// 2 x 127 x 127 = 32,258) never saturate its 16 bits.
const LIMIT: f32 = 127.0;

/// Values share a scale in groups of 32 consecutive inputs, weights (as bundled) and
/// activations alike.
pub(crate) const GROUP: usize = 32;

/// A linear layer's `[outputs, inputs]` weight matrix, 8-bit, in the order the products read
/// it: blocks of 8 outputs, and within a block, for each 4 consecutive inputs, those 4 of each
/// of the 8 outputs (32 bytes, one AVX2 register).
pub(crate) struct Matrix {
    inputs: usize,
    outputs: usize,
    packed: Vec<i8>,
    /// For each block of 8 outputs, for each group of 32 inputs, the 8 outputs' steps.
    scales: Vec<f32>,
}

/// Input rows quantized: each row's values and their magnitudes (what `vpmaddubsw` multiplies,
/// unsigned, the signs moved to the weights), each group of 32 with its own scale.
#[derive(Default)]
pub(crate) struct Rows {
    values: Vec<i8>,
    magnitudes: Vec<u8>,
    scales: Vec<f32>,
}

impl Matrix {
    /// `values` are `[outputs, inputs]` I8 bytes (within ±127) as bundled, `steps` the scale
    /// of each 32 of them in that order; `outputs` is a multiple of 16, `inputs` of 32.
    pub fn new(values: &[u8], steps: &[f32], outputs: usize, inputs: usize) -> Self {
        assert!(outputs.is_multiple_of(16) && inputs.is_multiple_of(GROUP));
        assert!(values.len() == outputs * inputs && steps.len() == values.len() / GROUP);
        assert!(
            values.iter().all(|&v| v != 0x80),
            "-128 would saturate the products"
        );
        let mut packed = Vec::with_capacity(values.len());
        let mut scales = Vec::with_capacity(steps.len());
        for block in 0..outputs / 8 {
            for quad in 0..inputs / 4 {
                for output in block * 8..block * 8 + 8 {
                    let start = output * inputs + quad * 4;
                    packed.extend(values[start..start + 4].iter().map(|&v| v as i8));
                }
            }
            for group in 0..inputs / GROUP {
                for output in block * 8..block * 8 + 8 {
                    scales.push(steps[output * inputs / GROUP + group]);
                }
            }
        }
        Self {
            inputs,
            outputs,
            packed,
            scales,
        }
    }

    /// `output[r] = rows[r] · weightᵀ + bias`, for `rows` quantized from `inputs`-wide rows.
    pub fn product(&self, rows: &Rows, bias: &[f32], output: &mut Vec<f32>) {
        let count = rows.values.len() / self.inputs;
        assert_eq!(rows.values.len(), count * self.inputs);
        assert_eq!(rows.scales.len(), count * self.inputs / GROUP);
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
                    for quad in group * GROUP / 4..(group + 1) * GROUP / 4 {
                        let x = &values[quad * 4..quad * 4 + 4];
                        let w = &weights[quad * 32..quad * 32 + 32];
                        for (sum, w) in sums.iter_mut().zip(w.chunks_exact(4)) {
                            for (&x, &w) in x.iter().zip(w) {
                                *sum += x as i32 * w as i32;
                            }
                        }
                    }
                    let scale = rows.scales[r * groups + group];
                    let steps = &self.scales[(block * groups + group) * 8..][..8];
                    for ((total, sum), step) in totals.iter_mut().zip(sums).zip(steps) {
                        *total += sum as f32 * (scale * step);
                    }
                }
                for ((value, total), bias) in out.iter_mut().zip(totals).zip(&bias[block * 8..]) {
                    *value = total + bias;
                }
            }
        }
    }
}

impl Rows {
    /// Quantizes `input`'s rows of `width` values, each 32 to ±127 times their own scale.
    pub fn quantize(&mut self, input: &[f32], width: usize) {
        assert!(width.is_multiple_of(GROUP) && input.len().is_multiple_of(width));
        self.values.clear();
        self.values.resize(input.len(), 0);
        self.magnitudes.clear();
        self.magnitudes.resize(input.len(), 0);
        self.scales.clear();
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: AVX2 is present (checked just above).
            unsafe { avx2::quantize(self, input) };
            return;
        }
        quantize(self, input);
    }
}

/// The same F32 operations on every target (no FMA), so that every target's integers agree.
#[inline(always)]
fn quantize(rows: &mut Rows, input: &[f32]) {
    for ((group, values), magnitudes) in input
        .chunks_exact(GROUP)
        .zip(rows.values.chunks_exact_mut(GROUP))
        .zip(rows.magnitudes.chunks_exact_mut(GROUP))
    {
        let max = group.iter().fold(0.0f32, |m, v| m.max(v.abs()));
        let inverse = if max > 0.0 { LIMIT / max } else { 0.0 };
        for ((q, m), &v) in values.iter_mut().zip(magnitudes.iter_mut()).zip(group) {
            // Round to nearest, ties to even, without a call (|v · inverse| <= 127).
            let rounded = (v * inverse + 12_582_912.0) - 12_582_912.0;
            *q = rounded as i8;
            *m = rounded.abs() as u8;
        }
        rows.scales.push(max / LIMIT);
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::{GROUP, Matrix, Rows};
    use std::arch::x86_64::*;

    /// [`super::quantize`] 32 values at a time: the same F32 operations, so the same bytes.
    #[target_feature(enable = "avx2")]
    pub(super) fn quantize(rows: &mut Rows, input: &[f32]) {
        let magic = _mm256_set1_ps(12_582_912.0);
        let sign = _mm256_set1_ps(-0.0);
        // The dwords of `packs` back in order: lanes hold elements 0-3 and 4-7 of each input.
        let order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
        for ((group, values), magnitudes) in input
            .as_chunks::<GROUP>()
            .0
            .iter()
            .zip(rows.values.as_chunks_mut::<GROUP>().0)
            .zip(rows.magnitudes.as_chunks_mut::<GROUP>().0)
        {
            // SAFETY: 32 F32 in, 32 bytes out twice (unaligned access).
            unsafe {
                let x: [__m256; 4] =
                    std::array::from_fn(|i| _mm256_loadu_ps(group.as_ptr().add(8 * i)));
                let mut top = _mm256_max_ps(
                    _mm256_max_ps(_mm256_andnot_ps(sign, x[0]), _mm256_andnot_ps(sign, x[1])),
                    _mm256_max_ps(_mm256_andnot_ps(sign, x[2]), _mm256_andnot_ps(sign, x[3])),
                );
                top = _mm256_max_ps(top, _mm256_permute2f128_ps(top, top, 1));
                top = _mm256_max_ps(top, _mm256_shuffle_ps(top, top, 0b01_00_11_10));
                top = _mm256_max_ps(top, _mm256_shuffle_ps(top, top, 0b10_11_00_01));
                let max = _mm256_cvtss_f32(top);
                let inverse = _mm256_set1_ps(if max > 0.0 { super::LIMIT / max } else { 0.0 });
                let q = x.map(|x| {
                    let rounded =
                        _mm256_sub_ps(_mm256_add_ps(_mm256_mul_ps(x, inverse), magic), magic);
                    _mm256_cvtps_epi32(rounded)
                });
                let bytes = _mm256_packs_epi16(
                    _mm256_packs_epi32(q[0], q[1]),
                    _mm256_packs_epi32(q[2], q[3]),
                );
                let bytes = _mm256_permutevar8x32_epi32(bytes, order);
                _mm256_storeu_si256(values.as_mut_ptr().cast(), bytes);
                _mm256_storeu_si256(magnitudes.as_mut_ptr().cast(), _mm256_abs_epi8(bytes));
                rows.scales.push(max / super::LIMIT);
            }
        }
    }

    /// 16 outputs at a time, every row passing them (TILE rows at a time): the 16 outputs'
    /// weights (at most 24 KB) stay in L1 while the rows go by.
    #[target_feature(enable = "avx2")]
    pub(super) fn product(matrix: &Matrix, rows: &Rows, bias: &[f32], output: &mut [f32]) {
        let width = matrix.inputs;
        let count = rows.values.len() / width;
        for pair in 0..matrix.outputs / 16 {
            let mut r = 0;
            while r < count {
                let tile = (count - r).min(TILE);
                let totals = match tile {
                    TILE => block::<TILE>(matrix, rows, r, pair),
                    _ => widen(block::<1>(matrix, rows, r, pair)),
                };
                for (i, totals) in totals.iter().take(tile).enumerate() {
                    let start = (r + i) * matrix.outputs + pair * 16;
                    let into: &mut [f32; 16] = (&mut output[start..start + 16]).try_into().unwrap();
                    let bias: &[f32; 16] = bias[pair * 16..pair * 16 + 16].try_into().unwrap();
                    // SAFETY: 16 F32 each (unaligned access).
                    unsafe {
                        for (half, &total) in totals.iter().enumerate() {
                            let bias = _mm256_loadu_ps(bias.as_ptr().add(half * 8));
                            let value = _mm256_add_ps(total, bias);
                            _mm256_storeu_ps(into.as_mut_ptr().add(half * 8), value);
                        }
                    }
                }
                r += tile;
            }
        }
    }

    const TILE: usize = 2;

    #[target_feature(enable = "avx2")]
    #[inline]
    fn widen<const R: usize>(totals: [[__m256; 2]; R]) -> [[__m256; 2]; TILE] {
        let mut all = [[_mm256_setzero_ps(); 2]; TILE];
        all[..R].copy_from_slice(&totals);
        all
    }

    /// R rows (from `first`) times the `pair`-th 16 outputs' weights, as 2 x 8 F32: each
    /// group of 32 inputs summed exactly in `i32`, then scaled by its two steps and added.
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
        let steps = &matrix.scales[pair * 16 * groups..(pair + 1) * 16 * groups];
        let values = &rows.values[first * width..(first + R) * width];
        let magnitudes = &rows.magnitudes[first * width..(first + R) * width];
        let scales = &rows.scales[first * groups..(first + R) * groups];
        let (low, high) = weights.split_at(8 * width);
        let (low_steps, high_steps) = steps.split_at(8 * groups);
        let ones = _mm256_set1_epi16(1);
        let mut totals = [[_mm256_setzero_ps(); 2]; R];
        for group in 0..groups {
            let mut sums = [[_mm256_setzero_si256(); 2]; R];
            for quad in group * GROUP / 4..(group + 1) * GROUP / 4 {
                // SAFETY: `quad * 32 + 32 <= 8 * width` bytes of each half of the weights, and
                // `r * width + quad * 4 + 4 <= R * width` bytes of the R rows (the slices'
                // lengths above); unaligned loads throughout.
                unsafe {
                    let w0 = _mm256_loadu_si256(low.as_ptr().add(quad * 32).cast());
                    let w1 = _mm256_loadu_si256(high.as_ptr().add(quad * 32).cast());
                    for (r, sums) in sums.iter_mut().enumerate() {
                        let at = r * width + quad * 4;
                        let x = values.as_ptr().add(at).cast::<i32>().read_unaligned();
                        let m = magnitudes.as_ptr().add(at).cast::<i32>().read_unaligned();
                        let (x, m) = (_mm256_set1_epi32(x), _mm256_set1_epi32(m));
                        // |x| (unsigned) times w signed as x: x·w, in pairs, then in fours.
                        let p0 = _mm256_maddubs_epi16(m, _mm256_sign_epi8(w0, x));
                        let p1 = _mm256_maddubs_epi16(m, _mm256_sign_epi8(w1, x));
                        sums[0] = _mm256_add_epi32(sums[0], _mm256_madd_epi16(p0, ones));
                        sums[1] = _mm256_add_epi32(sums[1], _mm256_madd_epi16(p1, ones));
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
            for (r, (totals, sums)) in totals.iter_mut().zip(sums).enumerate() {
                let scale = _mm256_set1_ps(scales[r * groups + group]);
                for (total, (sum, steps)) in totals.iter_mut().zip(sums.iter().zip([s0, s1])) {
                    let value =
                        _mm256_mul_ps(_mm256_cvtepi32_ps(*sum), _mm256_mul_ps(scale, steps));
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
        // A group of zeros (no scale) and one of a single value (its own step).
        input[GROUP..2 * GROUP].fill(0.0);
        input[2 * GROUP..3 * GROUP].fill(0.0);
        input[2 * GROUP + 5] = -3.5;
        let bias: Vec<f32> = (0..outputs).map(|_| next()).collect();
        // Weights as the bundled ones are: 8-bit, a step for each 32.
        let mut values = Vec::new();
        let mut steps = Vec::new();
        for group in weight.chunks_exact(GROUP) {
            let max = group.iter().fold(0.0f32, |m, v| m.max(v.abs()));
            steps.push(max / LIMIT);
            values.extend(group.iter().map(|v| (v * LIMIT / max).round() as i8 as u8));
        }
        let weight: Vec<f32> = values
            .iter()
            .enumerate()
            .map(|(i, &v)| v as i8 as f32 * steps[i / GROUP])
            .collect();
        let matrix = Matrix::new(&values, &steps, outputs, inputs);
        let mut rows = Rows::default();
        rows.quantize(&input, inputs);
        let mut portable = Rows::default();
        portable.values.resize(input.len(), 0);
        portable.magnitudes.resize(input.len(), 0);
        quantize(&mut portable, &input);
        assert_eq!(rows.values, portable.values);
        assert_eq!(rows.magnitudes, portable.magnitudes);
        assert_eq!(rows.scales, portable.scales);
        let mut fast = Vec::new();
        matrix.product(&rows, &bias, &mut fast);
        let mut slow = vec![0.0; count * outputs];
        matrix.portable(&rows, &bias, &mut slow);
        assert_eq!(fast, slow);
        // And close to the F32 product: within 1% of the sum of the terms' magnitudes.
        for r in 0..count {
            for o in 0..outputs {
                let terms = (0..inputs).map(|i| input[r * inputs + i] * weight[o * inputs + i]);
                let exact = terms.clone().sum::<f32>() + bias[o];
                let magnitude = terms.map(f32::abs).sum::<f32>();
                let error = (exact - slow[r * outputs + o]).abs();
                assert!(error < 0.01 * magnitude, "{error} of {magnitude}");
            }
        }
    }
}
