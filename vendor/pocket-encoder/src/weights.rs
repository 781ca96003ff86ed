use crate::{Error, inference};
use std::collections::HashMap;

pub(crate) struct Weight {
    pub shape: Vec<usize>,
    pub data: Vec<f32>,
    /// For an 8-bit matrix, its values as bundled (I8 bytes) and each group of 32's scale;
    /// its `data` is then empty.
    pub q8: Option<(&'static [u8], Vec<f32>)>,
}

/// The word-piece embedding table (30,522 rows), left in its bundled 4-bit form and read a row
/// at a time: expanded to F32 it was 47 MB, two thirds of the model's memory.
pub(crate) struct WordTable {
    packed: &'static [u8],
    scales: &'static [u8],
    width: usize,
    rows: usize,
}

pub(crate) const WORDS: &str = "embeddings.word_embeddings.weight";

impl WordTable {
    /// Adds row `id` to `into`, dequantized exactly as the whole table once was.
    pub fn add_row(&self, id: usize, into: &mut [f32]) -> Result<(), Error> {
        if id >= self.rows || into.len() != self.width {
            return Err(inference("invalid token id"));
        }
        let start = id * self.width;
        for (j, value) in into.iter_mut().enumerate() {
            let i = start + j;
            let nibble = (self.packed[i / 2] >> ((i % 2) * 4)) & 15;
            let scale = scale_at(self.scales, i / 32);
            *value += (nibble as i16 - 8) as f32 * scale;
        }
        Ok(())
    }
}

fn scale_at(scales: &[u8], group: usize) -> f32 {
    half::f16::from_bits(u16::from_le_bytes([
        scales[2 * group],
        scales[2 * group + 1],
    ]))
    .to_f32()
}

pub(crate) fn load() -> Result<(HashMap<String, Weight>, WordTable), Error> {
    static BUNDLED: &[u8] = include_bytes!("../assets/model.safetensors");
    let file = safetensors::SafeTensors::deserialize(BUNDLED).map_err(inference)?;
    let shapes: HashMap<String, Vec<usize>> =
        serde_json::from_str(include_str!("../assets/shapes.json")).map_err(inference)?;
    let mut weights = HashMap::new();
    let mut words = None;
    for (name, shape) in shapes {
        let count = shape.iter().product::<usize>();
        if shape.len() < 2 {
            let data = file
                .tensor(&name)
                .map_err(inference)?
                .data()
                .as_chunks::<4>()
                .0
                .iter()
                .map(|b| f32::from_le_bytes(*b))
                .collect::<Vec<_>>();
            if data.len() != count {
                return Err(inference("invalid bundled tensor length"));
            }
            weights.insert(
                name,
                Weight {
                    shape,
                    data,
                    q8: None,
                },
            );
            continue;
        }
        let scales = file
            .tensor(&format!("{name}.scales"))
            .map_err(inference)?
            .data();
        if scales.len() / 2 * 32 < count {
            return Err(inference("invalid bundled quantized tensor length"));
        }
        // The transformer layers' matrices are 8-bit: at 4 bits, as the word-piece table is,
        // all-MiniLM-L6-v2's vectors fell to a cosine of 0.89-0.96 with the F32 model's
        // (tools/quantize.py says more).
        if let Ok(bytes) = file.tensor(&format!("{name}.q8")) {
            let bytes = bytes.data();
            if bytes.len() < count {
                return Err(inference("invalid bundled quantized tensor length"));
            }
            let values = &bytes[..count];
            let steps: Vec<f32> = (0..count.div_ceil(32))
                .map(|group| scale_at(scales, group))
                .collect();
            // Not expanded to F32: the products read the 8-bit values themselves.
            weights.insert(
                name,
                Weight {
                    shape,
                    data: Vec::new(),
                    q8: Some((values, steps)),
                },
            );
            continue;
        }
        let packed = file
            .tensor(&format!("{name}.q4"))
            .map_err(inference)?
            .data();
        if packed.len() * 2 < count {
            return Err(inference("invalid bundled quantized tensor length"));
        }
        if name == WORDS {
            words = Some(WordTable {
                packed,
                scales,
                rows: shape[0],
                width: shape[1],
            });
            continue;
        }
        let data = (0..count)
            .map(|i| {
                let nibble = (packed[i / 2] >> ((i % 2) * 4)) & 15;
                (nibble as i16 - 8) as f32 * scale_at(scales, i / 32)
            })
            .collect();
        weights.insert(
            name,
            Weight {
                shape,
                data,
                q8: None,
            },
        );
    }
    let words = words.ok_or_else(|| inference("missing bundled weight"))?;
    Ok((weights, words))
}
