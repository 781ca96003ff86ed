//! F32 execution of the bundled BERT (as many layers as its config.json says), with GEMM's F32 kernels (those Candle
//! uses), without compiling an FP16 backend. PKB's copy runs it on every target: within 2e-5
//! of the released crate's Candle path in every coordinate (tests/candle.rs), 1.17x as fast
//! a passage with its linear weights laid out as the products read them, and 1.4x again with
//! GELU's erf computed without a call.
use crate::{
    Error, inference,
    weights::{self, Weight, WordTable},
};
use std::collections::HashMap;

const HIDDEN: usize = 384;
const HEADS: usize = 12;
const HEAD: usize = HIDDEN / HEADS;
const INTERMEDIATE: usize = 1536;

pub(crate) struct Model {
    /// The linear layers' weights transposed (`[input, output]`), the rest as bundled.
    weights: HashMap<String, Weight>,
    words: WordTable,
    layers: usize,
}

impl Model {
    pub fn load() -> Result<Self, Error> {
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
        let (mut weights, words) = weights::load()?;
        // Once, so that each product reads its weights in order rather than packing them
        // from a transposed layout at every call (a passage 1.17x as fast).
        for (name, weight) in &mut weights {
            if name.starts_with("encoder.") && weight.shape.len() == 2 {
                let [outputs, inputs] = weight.shape[..] else {
                    return Err(inference("invalid bundled weight shape"));
                };
                let mut transposed = vec![0.0; weight.data.len()];
                for (o, row) in weight.data.chunks_exact(inputs).enumerate() {
                    for (i, &value) in row.iter().enumerate() {
                        transposed[i * outputs + o] = value;
                    }
                }
                *weight = Weight {
                    shape: vec![inputs, outputs],
                    data: transposed,
                };
            }
        }
        Ok(Self {
            weights,
            words,
            layers,
        })
    }

    fn weight(&self, name: &str, shape: &[usize]) -> Result<&[f32], Error> {
        let weight = self
            .weights
            .get(name)
            .ok_or_else(|| inference("missing bundled weight"))?;
        if weight.shape != shape {
            return Err(inference("invalid bundled weight shape"));
        }
        Ok(&weight.data)
    }

    fn linear(
        &self,
        input: &[f32],
        rows: usize,
        width: usize,
        output: usize,
        name: &str,
    ) -> Result<Vec<f32>, Error> {
        let weights = self.weight(&format!("{name}.weight"), &[width, output])?;
        let bias = self.weight(&format!("{name}.bias"), &[output])?;
        let mut result = matmul(input, rows, width, weights, output, false);
        for row in result.chunks_exact_mut(output) {
            for (value, bias) in row.iter_mut().zip(bias) {
                *value += bias;
            }
        }
        Ok(result)
    }

    fn norm(&self, values: &mut [f32], name: &str) -> Result<(), Error> {
        let scale = self.weight(&format!("{name}.weight"), &[HIDDEN])?;
        let bias = self.weight(&format!("{name}.bias"), &[HIDDEN])?;
        for row in values.as_chunks_mut::<HIDDEN>().0 {
            // Match Candle's F32 layer-norm reduction and epsilon.
            let mut sum = 0.0f32;
            let mut sum2 = 0.0f32;
            for &v in row.iter() {
                sum += v;
                sum2 += v * v;
            }
            let mean = sum / HIDDEN as f32;
            let inverse = (sum2 / HIDDEN as f32 - mean * mean + 1e-12).sqrt().recip();
            for ((v, scale), bias) in row.iter_mut().zip(scale).zip(bias) {
                *v = (*v - mean) * inverse * scale + bias;
            }
        }
        Ok(())
    }

    pub fn pooled(&self, ids: &[u32], types: &[u32], mask: &[u32]) -> Result<Vec<f32>, Error> {
        let n = ids.len();
        if n == 0 || n > 128 || types.len() != n || mask.len() != n {
            return Err(inference("invalid token dimensions"));
        }
        let positions = self.weight("embeddings.position_embeddings.weight", &[512, HIDDEN])?;
        let token_types = self.weight("embeddings.token_type_embeddings.weight", &[2, HIDDEN])?;
        let mut hidden = vec![0.0; n * HIDDEN];
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
            for j in 0..HIDDEN {
                row[j] =
                    (row[j] + token_types[kind as usize * HIDDEN + j]) + positions[i * HIDDEN + j];
            }
        }
        self.norm(&mut hidden, "embeddings.LayerNorm")?;
        for layer in 0..self.layers {
            let prefix = format!("encoder.layer.{layer}");
            let query = self.linear(
                &hidden,
                n,
                HIDDEN,
                HIDDEN,
                &format!("{prefix}.attention.self.query"),
            )?;
            let key = self.linear(
                &hidden,
                n,
                HIDDEN,
                HIDDEN,
                &format!("{prefix}.attention.self.key"),
            )?;
            let value = self.linear(
                &hidden,
                n,
                HIDDEN,
                HIDDEN,
                &format!("{prefix}.attention.self.value"),
            )?;
            let mut context = vec![0.0; n * HIDDEN];
            for head in 0..HEADS {
                let gather = |values: &[f32]| {
                    values
                        .as_chunks::<HIDDEN>()
                        .0
                        .iter()
                        .flat_map(|row| row[head * HEAD..(head + 1) * HEAD].iter().copied())
                        .collect::<Vec<_>>()
                };
                let q = gather(&query);
                let k = gather(&key);
                let v = gather(&value);
                let mut scores = matmul(&q, n, HEAD, &k, n, true);
                for row in scores.chunks_exact_mut(n) {
                    for (score, &mask) in row.iter_mut().zip(mask) {
                        *score = (*score as f64 / (HEAD as f64).sqrt()) as f32;
                        *score += if mask == 0 { f32::MIN } else { 0.0 };
                    }
                    let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
                    let mut sum = 0.0;
                    for score in row.iter_mut() {
                        *score = (*score - max).exp();
                        sum += *score;
                    }
                    for score in row {
                        *score /= sum;
                    }
                }
                let head_values = matmul(&scores, n, n, &v, HEAD, false);
                for (row, values) in context
                    .as_chunks_mut::<HIDDEN>()
                    .0
                    .iter_mut()
                    .zip(head_values.as_chunks::<HEAD>().0.iter())
                {
                    row[head * HEAD..(head + 1) * HEAD].copy_from_slice(values);
                }
            }
            let mut attention = self.linear(
                &context,
                n,
                HIDDEN,
                HIDDEN,
                &format!("{prefix}.attention.output.dense"),
            )?;
            for (a, h) in attention.iter_mut().zip(&hidden) {
                *a += h;
            }
            self.norm(
                &mut attention,
                &format!("{prefix}.attention.output.LayerNorm"),
            )?;
            let mut intermediate = self.linear(
                &attention,
                n,
                HIDDEN,
                INTERMEDIATE,
                &format!("{prefix}.intermediate.dense"),
            )?;
            for v in &mut intermediate {
                *v = (erf(*v * std::f32::consts::FRAC_1_SQRT_2) + 1.0) * 0.5 * *v;
            }
            hidden = self.linear(
                &intermediate,
                n,
                INTERMEDIATE,
                HIDDEN,
                &format!("{prefix}.output.dense"),
            )?;
            for (h, a) in hidden.iter_mut().zip(attention) {
                *h += a;
            }
            self.norm(&mut hidden, &format!("{prefix}.output.LayerNorm"))?;
        }
        let mut pooled = vec![0.0; HIDDEN];
        for (row, &mask) in hidden.as_chunks::<HIDDEN>().0.iter().zip(mask) {
            for (sum, &v) in pooled.iter_mut().zip(row) {
                *sum += v * mask as f32;
            }
        }
        Ok(pooled)
    }
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

fn matmul(
    lhs: &[f32],
    rows: usize,
    width: usize,
    rhs: &[f32],
    cols: usize,
    transpose: bool,
) -> Vec<f32> {
    assert_eq!(lhs.len(), rows * width);
    assert_eq!(rhs.len(), width * cols);
    let mut output = vec![0.0; rows * cols];
    // All matrices are owned contiguous F32 slices. Lengths are checked above;
    // transposition changes strides only, and output cannot alias either input.
    unsafe {
        gemm::gemm(
            rows,
            cols,
            width,
            output.as_mut_ptr(),
            1,
            cols as isize,
            false,
            lhs.as_ptr(),
            1,
            width as isize,
            rhs.as_ptr(),
            if transpose { width as isize } else { 1 },
            if transpose { 1 } else { cols as isize },
            0.0,
            1.0,
            false,
            false,
            false,
            gemm::Parallelism::None,
        );
    }
    output
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

    #[test]
    fn matrix_layouts_match_scalar_products() {
        let a = [1., 2., 3., 4., 5., 6.];
        let b = [7., 8., 9., 10., 11., 12.];
        assert_eq!(matmul(&a, 2, 3, &b, 2, false), [58., 64., 139., 154.]);
        assert_eq!(
            matmul(&a, 2, 3, &[7., 9., 11., 8., 10., 12.], 2, true),
            [58., 64., 139., 154.]
        );
    }
}
