//! PKB's copy against the released crate: `candle_vectors.json` holds the vectors that
//! pocket-encoder 0.1.2 from crates.io (its Candle path, on x86-64 with AVX-512) gave for these
//! texts, so that the vectors kept by stores before the copy stay comparable with new ones.

use pocket_encoder::Encoder;

#[test]
fn every_coordinate_within_2e_5_of_the_released_crates() -> Result<(), Box<dyn std::error::Error>> {
    let expected: Vec<serde_json::Value> =
        serde_json::from_str(include_str!("candle_vectors.json"))?;
    assert_eq!(
        expected.len(),
        10,
        "the released crate's vectors of ten texts"
    );
    let encoder = Encoder::new()?;
    let mut worst = 0.0f32;
    for row in &expected {
        let text = row["text"].as_str().unwrap();
        let actual = encoder.embed(&[text])?.pop().unwrap();
        let released: Vec<f32> = row["vector"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap() as f32)
            .collect();
        assert_eq!(actual.len(), released.len());
        for (a, b) in actual.iter().zip(&released) {
            worst = worst.max((a - b).abs());
        }
    }
    assert!(worst < 2e-5, "coordinate drift {worst}");
    Ok(())
}
