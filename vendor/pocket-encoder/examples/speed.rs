//! The encoder's load time, memory and time a passage, on one thread (the products run on the
//! calling thread only). `cargo run --release -p pocket-encoder --example speed [PASSAGES [WORDS]]`
//!
//! Passages are 120 words drawn from a fixed English word list, so that the tokenizer cuts
//! each at the encoder's 128 tokens: the cost of a full passage (the indexer's 80 words of
//! prose are 100-128 tokens).

use std::time::Instant;

fn status(field: &str) -> String {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find(|line| line.starts_with(field))
        .map(|line| line[field.len()..].trim().to_owned())
        .unwrap_or_else(|| "?".into())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let passages: usize = std::env::args()
        .nth(1)
        .map(|n| n.parse())
        .transpose()?
        .unwrap_or(200);
    // 120 words fill the 128 tokens; a query is a dozen.
    let length: usize = std::env::args()
        .nth(2)
        .map(|n| n.parse())
        .transpose()?
        .unwrap_or(120);
    println!("before loading: RSS {}", status("VmRSS:"));
    let start = Instant::now();
    let encoder = pocket_encoder::Encoder::new()?;
    let loaded = start.elapsed();
    println!(
        "loaded in {:.1} ms: RSS {}, {}",
        loaded.as_secs_f64() * 1e3,
        status("VmRSS:"),
        pocket_encoder::model_info().id
    );
    let words: Vec<&str> = "the results of protein expression were measured in patients with \
        chronic disease and compared against a control group whose cells showed increased \
        activity after treatment for two weeks although mortality did not differ significantly \
        between cohorts receiving placebo or inhibitor therapy during follow-up"
        .split_whitespace()
        .collect();
    let mut seed = 7u64;
    let texts: Vec<String> = (0..passages)
        .map(|_| {
            (0..length)
                .map(|_| {
                    seed = seed
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    words[(seed >> 33) as usize % words.len()]
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    encoder.embed(&texts[..1])?; // warm
    let start = Instant::now();
    for text in &texts {
        encoder.embed(&[text])?;
    }
    let each = start.elapsed().as_secs_f64() * 1e3 / passages as f64;
    println!(
        "{passages} passages of {length} words: {each:.2} ms each; peak RSS {}",
        status("VmHWM:")
    );
    Ok(())
}
