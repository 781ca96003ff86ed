//! The encoder against an independent implementation over the same weights:
//! `bundled_vectors.json` holds the vectors that tools/reference.py (a BERT forward pass in
//! numpy, f64, sharing no code with the encoder) gives for these texts from
//! assets/model.safetensors, dequantized. Only the arithmetic should differ: with F32 products
//! every coordinate was within 2e-5; since the linear layers' inputs are rounded to 16 bits
//! for integer products (src/int8.rs), within 1.3e-4 (4e-5 for most texts), and every cosine
//! at least 0.99999. The same script over paraphrase-MiniLM-L3-v2's file came within 1.2e-7
//! of the released crate's Candle vectors in every coordinate.

use pocket_encoder::Encoder;

#[test]
fn every_coordinate_within_2e_4_of_an_independent_forward_pass()
-> Result<(), Box<dyn std::error::Error>> {
    let expected: serde_json::Value = serde_json::from_str(include_str!("bundled_vectors.json"))?;
    let texts = expected["texts"].as_array().unwrap();
    let vectors = expected["embeddings"].as_array().unwrap();
    assert_eq!(texts.len(), 13, "the vectors of thirteen texts");
    let encoder = Encoder::new()?;
    let mut worst = 0.0f32;
    for (text, vector) in texts.iter().zip(vectors) {
        let actual = encoder.embed(&[text.as_str().unwrap()])?.pop().unwrap();
        let reference: Vec<f32> = vector
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap() as f32)
            .collect();
        assert_eq!(actual.len(), reference.len());
        for (a, b) in actual.iter().zip(&reference) {
            worst = worst.max((a - b).abs());
        }
        let cosine: f32 = actual.iter().zip(&reference).map(|(a, b)| a * b).sum();
        assert!(cosine >= 0.99999, "cosine {cosine} with the reference");
    }
    assert!(worst < 2e-4, "coordinate drift {worst}");
    Ok(())
}
