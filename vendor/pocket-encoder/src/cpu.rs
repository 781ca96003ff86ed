//! The bundled BERT (as many layers as its config.json says) on the CPU: the linear layers as
//! integer products of their 8-bit weights and 16-bit inputs (`int8`), attention's two
//! products with GEMM's F32 kernels (those Candle uses), softmax, GELU and layer norms in F32,
//! the whole pass compiled for AVX2 too and chosen at run time. README.md has the history and
//! the figures.
use crate::{
    Error, inference, int8,
    weights::{self, Weight, WordTable},
};
use std::collections::HashMap;

const HIDDEN: usize = 384;
const HEADS: usize = 12;
const HEAD: usize = HIDDEN / HEADS;
const INTERMEDIATE: usize = 1536;

/// A linear layer: 8-bit weights (`int8`), F32 bias.
struct Linear {
    matrix: int8::Matrix,
    bias: Vec<f32>,
}

struct Norm {
    scale: Vec<f32>,
    bias: Vec<f32>,
}

struct Layer {
    /// Query, key and value in one product (outputs 0..384, 384..768, 768..1152), so that the
    /// layer's input is quantized and read once for the three.
    qkv: Linear,
    attention_output: Linear,
    attention_norm: Norm,
    intermediate: Linear,
    output: Linear,
    output_norm: Norm,
}

pub(crate) struct Model {
    positions: Vec<f32>,
    token_types: Vec<f32>,
    embedding_norm: Norm,
    layers: Vec<Layer>,
    words: WordTable,
}

/// The bundled tensors not yet taken.
struct Bundle {
    tensors: HashMap<String, Weight>,
    /// F32 products for the linear layers (see `int8::Matrix::dense`).
    dense: bool,
}

impl Bundle {
    fn weight(&mut self, name: &str, shape: &[usize]) -> Result<Weight, Error> {
        let weight = self
            .tensors
            .remove(name)
            .ok_or_else(|| inference("missing bundled weight"))?;
        if weight.shape != shape {
            return Err(inference("invalid bundled weight shape"));
        }
        Ok(weight)
    }

    /// A tensor in F32 (an 8-bit one dequantized).
    fn take(&mut self, name: &str, shape: &[usize]) -> Result<Vec<f32>, Error> {
        let weight = self.weight(name, shape)?;
        Ok(match weight.q8 {
            Some((values, steps)) => values
                .iter()
                .enumerate()
                .map(|(i, &v)| v as i8 as f32 * steps[i / int8::GROUP])
                .collect(),
            None => weight.data,
        })
    }

    fn norm(&mut self, name: &str) -> Result<Norm, Error> {
        Ok(Norm {
            scale: self.take(&format!("{name}.weight"), &[HIDDEN])?,
            bias: self.take(&format!("{name}.bias"), &[HIDDEN])?,
        })
    }

    /// One product for the linear layers `names`, their `[outputs, inputs]` matrices stacked
    /// by outputs.
    fn linear(&mut self, names: &[&str], inputs: usize, outputs: usize) -> Result<Linear, Error> {
        let (mut values, mut steps, mut bias) = (Vec::new(), Vec::new(), Vec::new());
        for name in names {
            let (bytes, scales) = self
                .weight(&format!("{name}.weight"), &[outputs, inputs])?
                .q8
                .ok_or_else(|| inference("a linear layer's weights are not 8-bit"))?;
            values.extend_from_slice(bytes);
            steps.extend(scales);
            bias.extend(self.take(&format!("{name}.bias"), &[outputs])?);
        }
        Ok(Linear {
            matrix: int8::Matrix::new(&values, &steps, bias.len(), inputs, self.dense),
            bias,
        })
    }
}

/// What one passage's pass writes, kept between its layers.
#[derive(Default)]
struct Scratch {
    rows: int8::Rows,
    qkv: Vec<f32>,
    context: Vec<f32>,
    attention: Vec<f32>,
    intermediate: Vec<f32>,
    scores: Vec<f32>,
}

impl Model {
    pub fn load() -> Result<Self, Error> {
        Self::load_with(!int8::fast())
    }

    /// With `dense`, F32 products for the linear layers rather than integer ones.
    fn load_with(dense: bool) -> Result<Self, Error> {
        let config: serde_json::Value =
            serde_json::from_str(include_str!("../assets/config.json")).map_err(inference)?;
        let layers = config["num_hidden_layers"].as_u64().unwrap_or(0) as usize;
        if config["hidden_size"] != HIDDEN
            || config["num_attention_heads"] != HEADS
            || !(1..=24).contains(&layers)
            || config["intermediate_size"] != INTERMEDIATE
            || config["hidden_act"] != "gelu"
            || config["layer_norm_eps"] != 1e-12
        {
            return Err(inference("unsupported bundled MiniLM configuration"));
        }
        let (weights, words) = weights::load()?;
        let mut bundle = Bundle {
            tensors: weights,
            dense,
        };
        let positions = bundle.take("embeddings.position_embeddings.weight", &[512, HIDDEN])?;
        let token_types = bundle.take("embeddings.token_type_embeddings.weight", &[2, HIDDEN])?;
        let embedding_norm = bundle.norm("embeddings.LayerNorm")?;
        let layers = (0..layers)
            .map(|layer| {
                let at = |name: &str| format!("encoder.layer.{layer}.{name}");
                Ok(Layer {
                    qkv: bundle.linear(
                        &[
                            &at("attention.self.query"),
                            &at("attention.self.key"),
                            &at("attention.self.value"),
                        ],
                        HIDDEN,
                        HIDDEN,
                    )?,
                    attention_output: bundle.linear(
                        &[&at("attention.output.dense")],
                        HIDDEN,
                        HIDDEN,
                    )?,
                    attention_norm: bundle.norm(&at("attention.output.LayerNorm"))?,
                    intermediate: bundle.linear(
                        &[&at("intermediate.dense")],
                        HIDDEN,
                        INTERMEDIATE,
                    )?,
                    output: bundle.linear(&[&at("output.dense")], INTERMEDIATE, HIDDEN)?,
                    output_norm: bundle.norm(&at("output.LayerNorm"))?,
                })
            })
            .collect::<Result<Vec<_>, Error>>()?;
        Ok(Self {
            positions,
            token_types,
            embedding_norm,
            layers,
            words,
        })
    }

    pub fn pooled(&self, ids: &[u32], types: &[u32], mask: &[u32]) -> Result<Vec<f32>, Error> {
        let n = ids.len();
        if n == 0 || n > 128 || types.len() != n || mask.len() != n {
            return Err(inference("invalid token dimensions"));
        }
        let hidden = self.embedded(ids, types)?;
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: AVX2 is present (checked just above).
            return Ok(unsafe { self.layers_avx2(hidden, mask) });
        }
        Ok(self.layers(hidden, mask))
    }

    /// The tokens' rows before the first layer norm.
    fn embedded(&self, ids: &[u32], types: &[u32]) -> Result<Vec<f32>, Error> {
        let mut hidden = vec![0.0; ids.len() * HIDDEN];
        for (i, ((&id, &kind), row)) in ids
            .iter()
            .zip(types)
            .zip(hidden.chunks_exact_mut(HIDDEN))
            .enumerate()
        {
            if kind >= 2 {
                return Err(inference("invalid token id"));
            }
            // In the order the sums were made before: word, then type, then position.
            self.words.add_row(id as usize, row)?;
            let kind = &self.token_types[kind as usize * HIDDEN..][..HIDDEN];
            let position = &self.positions[i * HIDDEN..][..HIDDEN];
            for ((v, kind), position) in row.iter_mut().zip(kind).zip(position) {
                *v = (*v + kind) + position;
            }
        }
        Ok(hidden)
    }

    /// The same code as [`Self::layers`], its loops compiled for 8 lanes.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    fn layers_avx2(&self, hidden: Vec<f32>, mask: &[u32]) -> Vec<f32> {
        self.layers(hidden, mask)
    }

    #[inline(always)]
    fn layers(&self, mut hidden: Vec<f32>, mask: &[u32]) -> Vec<f32> {
        let n = mask.len();
        let mut s = Scratch::default();
        norm(&mut hidden, &self.embedding_norm);
        for layer in &self.layers {
            linear(&layer.qkv, &hidden, &mut s.rows, &mut s.qkv);
            // Every value is written (`read_dst` false): no need to zero those already there.
            s.context.resize(n * HIDDEN, 0.0);
            attention(&s.qkv, mask, &mut s.scores, &mut s.context);
            linear(
                &layer.attention_output,
                &s.context,
                &mut s.rows,
                &mut s.attention,
            );
            for (a, h) in s.attention.iter_mut().zip(&hidden) {
                *a += h;
            }
            norm(&mut s.attention, &layer.attention_norm);
            linear(
                &layer.intermediate,
                &s.attention,
                &mut s.rows,
                &mut s.intermediate,
            );
            for v in &mut s.intermediate {
                *v = (erf(*v * std::f32::consts::FRAC_1_SQRT_2) + 1.0) * 0.5 * *v;
            }
            linear(&layer.output, &s.intermediate, &mut s.rows, &mut hidden);
            for (h, a) in hidden.iter_mut().zip(&s.attention) {
                *h += a;
            }
            norm(&mut hidden, &layer.output_norm);
        }
        let mut pooled = vec![0.0; HIDDEN];
        for (row, &mask) in hidden.as_chunks::<HIDDEN>().0.iter().zip(mask) {
            for (sum, &v) in pooled.iter_mut().zip(row) {
                *sum += v * mask as f32;
            }
        }
        pooled
    }
}

#[inline(always)]
fn linear(layer: &Linear, input: &[f32], rows: &mut int8::Rows, output: &mut Vec<f32>) {
    layer.matrix.apply(input, rows, &layer.bias, output);
}

#[inline(always)]
fn norm(values: &mut [f32], norm: &Norm) {
    for row in values.as_chunks_mut::<HIDDEN>().0 {
        // Candle's F32 layer-norm reduction and epsilon, the sums in 8 lanes.
        let sum = lanes(row, 0.0, |a, b| a + b);
        let mut squares = [0.0f32; HIDDEN];
        for (square, v) in squares.iter_mut().zip(row.iter()) {
            *square = v * v;
        }
        let sum2 = lanes(&squares, 0.0, |a, b| a + b);
        let mean = sum / HIDDEN as f32;
        let inverse = (sum2 / HIDDEN as f32 - mean * mean + 1e-12).sqrt().recip();
        for ((v, scale), bias) in row.iter_mut().zip(&norm.scale).zip(&norm.bias) {
            *v = (*v - mean) * inverse * scale + bias;
        }
    }
}

/// Self-attention of one passage: `qkv` is its rows' queries, keys and values side by side
/// (`n x 1152`); each head's scores and weighted values are products read in place (strides,
/// no copies), softmax with an exp that vectorizes.
#[inline(always)]
fn attention(qkv: &[f32], mask: &[u32], scores: &mut Vec<f32>, context: &mut [f32]) {
    let n = mask.len();
    let stride = 3 * HIDDEN;
    assert!(qkv.len() == n * stride && context.len() == n * HIDDEN);
    scores.resize(n * n, 0.0);
    let scale = 1.0 / (HEAD as f32).sqrt();
    for head in 0..HEADS {
        // SAFETY: every access is within `qkv` (n rows of 1152: queries at head·32, keys at
        // 384 + head·32, values at 768 + head·32, 32 wide), `scores` (n x n) and `context`
        // (n rows of 384, at head·32, 32 wide), as asserted above; the output aliases neither
        // input.
        unsafe {
            gemm::gemm(
                n,
                n,
                HEAD,
                scores.as_mut_ptr(),
                1,
                n as isize,
                false,
                qkv.as_ptr().add(head * HEAD),
                1,
                stride as isize,
                qkv.as_ptr().add(HIDDEN + head * HEAD),
                stride as isize,
                1,
                0.0,
                scale,
                false,
                false,
                false,
                gemm::Parallelism::None,
            );
        }
        for row in scores.chunks_exact_mut(n) {
            for (score, &mask) in row.iter_mut().zip(mask) {
                *score += if mask == 0 { f32::MIN } else { 0.0 };
            }
            let max = lanes(row, f32::NEG_INFINITY, f32::max);
            for score in row.iter_mut() {
                *score = exp(*score - max);
            }
            let inverse = lanes(row, 0.0, |a, b| a + b).recip();
            for score in row {
                *score *= inverse;
            }
        }
        // SAFETY: as above.
        unsafe {
            gemm::gemm(
                n,
                HEAD,
                n,
                context.as_mut_ptr().add(head * HEAD),
                1,
                HIDDEN as isize,
                false,
                scores.as_ptr(),
                1,
                n as isize,
                qkv.as_ptr().add(2 * HIDDEN + head * HEAD),
                1,
                stride as isize,
                0.0,
                1.0,
                false,
                false,
                false,
                gemm::Parallelism::None,
            );
        }
    }
}

/// `values` folded with `op` in 8 lanes, then the lanes folded: a reduction that vectorizes
/// (one running total a value is a chain of dependent adds, which a vector unit cannot split).
#[inline(always)]
fn lanes(values: &[f32], start: f32, op: impl Fn(f32, f32) -> f32) -> f32 {
    let mut lanes = [start; 8];
    let (chunks, rest) = values.as_chunks::<8>();
    for chunk in chunks {
        for (lane, &v) in lanes.iter_mut().zip(chunk) {
            *lane = op(*lane, v);
        }
    }
    let mut total = rest.iter().fold(start, |t, &v| op(t, v));
    for lane in lanes {
        total = op(total, lane);
    }
    total
}

/// e^x for f32 as Cephes' `expf` computes it (x = n·ln 2 + r, a degree-5 polynomial in r,
/// 2^n from the exponent bits), within 2 ulp for the softmax's x <= 0; no branch and no call,
/// so that the softmax vectorizes (libm's `expf` was a call a score).
#[inline(always)]
#[allow(
    clippy::excessive_precision,
    reason = "the coefficients as Cephes writes them, rounded to f32 by the compiler"
)]
fn exp(x: f32) -> f32 {
    let x = x.clamp(-87.0, 88.0);
    // Round to nearest without a call (|x·log2 e| < 2^22): `shifted`'s low bits are n.
    let shifted = x * std::f32::consts::LOG2_E + 12_582_912.0;
    let n = shifted - 12_582_912.0;
    let r = x - n * 0.693359375;
    let r = r - n * -2.12194440e-4;
    let mut p = 1.9875691500e-4f32;
    p = p * r + 1.3981999507e-3;
    p = p * r + 8.3334519073e-3;
    p = p * r + 4.1665795894e-2;
    p = p * r + 1.6666665459e-1;
    p = p * r + 5.0000001201e-1;
    let y = p * r * r + r + 1.0;
    // 2^n from n's bits, not `n as i32` (a saturating conversion, which does not vectorize).
    let biased = shifted
        .to_bits()
        .wrapping_sub(12_582_912f32.to_bits())
        .wrapping_add(127);
    y * f32::from_bits(biased << 23)
}

/// erf for f32 as Eigen, XLA and TVM compute it: x·P(x²)/Q(x²), rational polynomials on
/// [-4, 4] (where erf is ±1 in f32 beyond). No branch and no call, so that GELU's loop over a
/// layer's 128 x 1536 values vectorizes; libm's `erff`, a call each with branches, took 10%
/// of a passage.
#[inline(always)]
#[allow(
    clippy::excessive_precision,
    reason = "the coefficients as Eigen writes them, rounded to f32 by the compiler"
)]
fn erf(x: f32) -> f32 {
    let x = x.clamp(-4.0, 4.0);
    let x2 = x * x;
    let mut p = x2 * -2.72614225801306e-10 + 2.77068142495902e-08;
    p = x2 * p + -2.10102402082508e-06;
    p = x2 * p + -5.69250639462346e-05;
    p = x2 * p + -7.34990630326855e-04;
    p = x2 * p + -2.95459980854025e-03;
    p = x2 * p + -1.60960333262415e-02;
    let mut q = x2 * -1.45660718464996e-05 + -2.13374055278905e-04;
    q = x2 * q + -1.68282697438203e-03;
    q = x2 * q + -7.37332916720468e-03;
    q = x2 * q + -1.42647390514189e-02;
    x * p / q
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erf_is_within_5e_7_of_libm_s() {
        let mut worst = 0.0f32;
        for i in -80_000..=80_000 {
            let x = i as f32 * 1e-4;
            worst = worst.max((erf(x) - libm::erff(x)).abs());
        }
        assert!(worst <= 5e-7, "erf differs from libm's by {worst}");
        assert!((erf(1e30) - 1.0).abs() <= 5e-7 && (erf(-1e30) + 1.0).abs() <= 5e-7);
        assert_eq!(erf(0.0), 0.0);
    }

    /// The pass compiled for AVX2 and the one compiled for the target's baseline give the same
    /// bits (no operation is fused or reordered by the wider lanes), so that every CPU gives
    /// the same vectors (int8's tests show the same of its two paths).
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_avx2_pass_gives_the_same_bits_as_the_baseline_one() {
        if !std::arch::is_x86_feature_detected!("avx2") {
            return;
        }
        let model = Model::load().unwrap();
        // [CLS] the cat chased the dog [SEP]
        let ids = [101, 1996, 4937, 6202, 1996, 3899, 102];
        let hidden = model.embedded(&ids, &[0; 7]).unwrap();
        let mask = [1; 7];
        let baseline = model.layers(hidden.clone(), &mask);
        // SAFETY: AVX2 is present (checked above).
        let wide = unsafe { model.layers_avx2(hidden, &mask) };
        assert_eq!(baseline, wide);
    }

    /// Where the integer products have no fast path, F32 ones run instead: the vectors agree.
    #[test]
    fn f32_products_give_the_same_vectors_within_rounding() {
        let unit = |v: Vec<f32>| {
            let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            v.into_iter().map(|x| x / norm).collect::<Vec<_>>()
        };
        let ids = [101, 1996, 4937, 6202, 1996, 3899, 102];
        let (types, mask) = ([0; 7], [1; 7]);
        let integer = unit(
            Model::load_with(false)
                .unwrap()
                .pooled(&ids, &types, &mask)
                .unwrap(),
        );
        let dense = unit(
            Model::load_with(true)
                .unwrap()
                .pooled(&ids, &types, &mask)
                .unwrap(),
        );
        let worst = integer
            .iter()
            .zip(&dense)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0f32, f32::max);
        assert!(worst < 2e-4, "{worst}");
    }

    #[test]
    fn exp_is_within_3e_7_of_std_s_relatively() {
        let mut worst = 0.0f32;
        for i in -870_000..=0 {
            let x = i as f32 * 1e-4;
            let expected = x.exp();
            worst = worst.max((exp(x) - expected).abs() / expected);
        }
        assert!(
            worst <= 3e-7,
            "exp differs from std's by {worst} relatively"
        );
        assert_eq!(exp(0.0), 1.0);
        assert!(exp(f32::MIN) < 1e-37);
    }
}
