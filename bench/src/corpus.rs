//! Test notes from a fixed seed, the query mix, and a small inverted index.
//!
//! The generator (SplitMix64, a 5,000-word vocabulary drawn with a Zipf distribution, ~100-word
//! bodies, 3 to 6 word titles, 0 to 3 tags from 200) serves both benchmarks, `pkb-bench` and
//! `pkb-store-bench`. Each title starts with `#<n> `, so that the id the `write` tool derives
//! from it is unique (`#42 Brai stoun` -> `42-brai-stoun`), and tags are normalised as the
//! store would.
//!
//! The index answers "which notes match every word of this query, each as a prefix" with the
//! store's rules (case and diacritics folded, a word is a run of letters and digits). The
//! benchmark uses it to check the server's search results, and the floor server answers from it.

use std::collections::{BTreeMap, HashMap};

use pkb_core::note::{derive_id, normalize_tags};

const VOCABULARY: usize = 5_000;
const TAGS: usize = 200;
/// The seed of every generated note.
pub const SEED: u64 = 0x5eed_0f9b_2026;

/// SplitMix64: small, fast, and good enough for test data.
pub struct Rng(pub u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n`.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// A note as the benchmark expects the server to hold it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    /// The id, derived from the title as `write` does.
    pub id: String,
    /// The title.
    pub title: String,
    /// Normalised tags.
    pub tags: Vec<String>,
    /// The body.
    pub body: String,
}

impl Note {
    /// The note as a store draft.
    pub fn draft(&self) -> pkb_core::store::NoteDraft {
        pkb_core::store::NoteDraft {
            id: self.id.clone(),
            title: self.title.clone(),
            tags: self.tags.clone(),
            body: self.body.clone(),
        }
    }
}

/// The contract's three seed notes (a new store holds them): id, title, tags, body.
pub use pkb_core::store::SEED_NOTES as SEEDS;

/// The seed notes.
pub fn seed_notes() -> Vec<Note> {
    SEEDS
        .iter()
        .map(|(id, title, tags, body)| Note {
            id: (*id).to_owned(),
            title: (*title).to_owned(),
            tags: tags.iter().map(|t| (*t).to_owned()).collect(),
            body: (*body).to_owned(),
        })
        .collect()
}

/// The vocabulary and tag set.
pub struct Corpus {
    words: Vec<String>,
    /// Cumulative Zipf weights over `words`, for sampling by rank.
    cumulative: Vec<f64>,
    tags: Vec<String>,
}

impl Corpus {
    /// The vocabulary drawn from `rng`.
    pub fn new(rng: &mut Rng) -> Self {
        const ONSETS: &[&str] = &[
            "b", "c", "d", "f", "g", "h", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w", "br",
            "st", "tr", "pl", "gr", "sh", "ch", "th",
        ];
        const VOWELS: &[&str] = &["a", "e", "i", "o", "u", "ai", "ea", "ou", "é", "ö"];
        const CODAS: &[&str] = &["", "n", "r", "s", "t", "l", "m", "nd", "st", "ck"];
        let mut words = Vec::with_capacity(VOCABULARY);
        let mut seen = std::collections::HashSet::new();
        while words.len() < VOCABULARY {
            // Frequent words are short, as in natural language.
            let syllables = 1 + words.len() * 3 / VOCABULARY + rng.below(2);
            let mut w = String::new();
            for _ in 0..syllables {
                w.push_str(ONSETS[rng.below(ONSETS.len())]);
                w.push_str(VOWELS[rng.below(VOWELS.len())]);
                w.push_str(CODAS[rng.below(CODAS.len())]);
            }
            if seen.insert(w.clone()) {
                words.push(w);
            }
        }
        let mut total = 0.0;
        let cumulative = (1..=VOCABULARY)
            .map(|rank| {
                total += 1.0 / rank as f64;
                total
            })
            .collect();
        let tags = (0..TAGS).map(|i| format!("{}-{i}", words[i * 7])).collect();
        Corpus {
            words,
            cumulative,
            tags,
        }
    }

    fn word(&self, rng: &mut Rng) -> &str {
        let total = self.cumulative[VOCABULARY - 1];
        let x = rng.unit() * total;
        let rank = self.cumulative.partition_point(|&c| c < x);
        &self.words[rank.min(VOCABULARY - 1)]
    }

    /// Note number `i`, drawn from `rng`.
    pub fn note(&self, rng: &mut Rng, i: usize) -> Note {
        let title_words = 3 + rng.below(4);
        let mut title: Vec<&str> = (0..title_words).map(|_| self.word(rng)).collect();
        let mut first = title[0].to_owned();
        if let Some(c) = first.get(..1) {
            first = c.to_uppercase() + &first[1..];
        }
        title[0] = &first;
        let title = format!("#{i} {}", title.join(" "));
        let tags: Vec<String> = (0..rng.below(4))
            .map(|_| self.tags[rng.below(TAGS)].clone())
            .collect();
        let body_words = 80 + rng.below(41);
        let mut body = String::with_capacity(body_words * 8);
        for w in 0..body_words {
            body.push_str(self.word(rng));
            body.push_str(if w % 12 == 11 { ". " } else { " " });
        }
        Note {
            id: derive_id(&title),
            title,
            tags: normalize_tags(&tags),
            body: body.trim_end().to_owned(),
        }
    }

    /// The query mix: (class, query). The store bench's five classes, 100 queries each.
    pub fn queries(&self, rng: &mut Rng) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        for i in 0..100 {
            // The 20 most frequent words each appear in most notes: the worst case for ranking.
            out.push(("common word", self.words[i % 20].clone()));
        }
        for _ in 0..100 {
            out.push(("mid word", self.words[100 + rng.below(900)].clone()));
        }
        for _ in 0..100 {
            out.push((
                "rare word",
                self.words[1000 + rng.below(VOCABULARY - 1000)].clone(),
            ));
        }
        for _ in 0..100 {
            let w = &self.words[rng.below(VOCABULARY)];
            let len = w.char_indices().nth(3).map_or(w.len(), |(i, _)| i);
            out.push(("prefix (3 chars)", w[..len].to_owned()));
        }
        for _ in 0..100 {
            let a = self.words[rng.below(50)].clone();
            let b = self.words[50 + rng.below(VOCABULARY - 50)].clone();
            out.push(("two words", format!("{a} {b}")));
        }
        out
    }

    /// Tag number `i` of the tag set.
    pub fn tag(&self, i: usize) -> &str {
        &self.tags[i % self.tags.len()]
    }

    /// Some frequent words, for warming up.
    pub fn frequent_words(&self, n: usize) -> &[String] {
        &self.words[..n.min(self.words.len())]
    }
}

/// The notes of a store of `n` generated notes (seed notes not included), in load order.
pub fn generate(n: usize) -> (Corpus, Vec<Note>) {
    let mut rng = Rng(SEED);
    let corpus = Corpus::new(&mut rng);
    let notes = (0..n).map(|i| corpus.note(&mut rng, i)).collect();
    (corpus, notes)
}

/// Lowercase, without the diacritics of Latin letters, as FTS5's `remove_diacritics 2`.
pub fn fold(word: &str) -> String {
    word.chars()
        .flat_map(char::to_lowercase)
        .map(|c| match c {
            'à'..='å' => 'a',
            'ç' => 'c',
            'è'..='ë' => 'e',
            'ì'..='ï' => 'i',
            'ñ' => 'n',
            'ò'..='ö' | 'ø' => 'o',
            'ù'..='ü' => 'u',
            'ý' | 'ÿ' => 'y',
            c => c,
        })
        .collect()
}

/// The folded tokens of a text: runs of letters and digits.
pub fn tokens(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|t| !t.is_empty())
        .map(fold)
}

/// The folded words of a query, split as the store splits them.
pub fn query_words(query: &str) -> Vec<String> {
    query
        .split(|c: char| c.is_whitespace() || (c.is_ascii() && !c.is_ascii_alphanumeric()))
        .flat_map(tokens)
        .collect()
}

/// The English Snowball stem of a folded token, as the store takes it (`store/stemming.rs`).
fn stem(token: &str) -> String {
    static ENGLISH: std::sync::LazyLock<rust_stemmers::Stemmer> = std::sync::LazyLock::new(|| {
        rust_stemmers::Stemmer::create(rust_stemmers::Algorithm::English)
    });
    if token.len() > 64 {
        return token.to_owned();
    }
    ENGLISH.stem(token).into_owned()
}

/// Which notes hold each token, by position in load order, and the tokens of each stem.
#[derive(Default)]
pub struct Index {
    postings: BTreeMap<String, Vec<u32>>,
    by_stem: HashMap<String, Vec<String>>,
}

impl Index {
    /// An index over `notes`; a note's number is its position.
    pub fn new<'a>(notes: impl IntoIterator<Item = &'a Note>) -> Self {
        let mut index = Index::default();
        for (i, note) in notes.into_iter().enumerate() {
            index.add(i as u32, note);
        }
        index
    }

    /// Adds note number `n`, which must be higher than every number indexed so far.
    pub fn add(&mut self, n: u32, note: &Note) {
        for token in note_tokens(note) {
            let list = match self.postings.get_mut(&token) {
                Some(list) => list,
                None => {
                    self.by_stem
                        .entry(stem(&token))
                        .or_default()
                        .push(token.clone());
                    self.postings.entry(token).or_default()
                }
            };
            if list.last() != Some(&n) {
                list.push(n);
            }
        }
    }

    /// Every note matching all words of `query` (each as a prefix, or as a token of its
    /// stem), newest first.
    pub fn search(&self, query: &str) -> Vec<u32> {
        let words = query_words(query);
        if words.is_empty() {
            return Vec::new();
        }
        let mut result: Option<Vec<u32>> = None;
        for word in words {
            let forms = self.by_stem.get(&stem(&word)).into_iter().flatten();
            let mut matches: Vec<u32> = self
                .postings
                .range(word.clone()..)
                .take_while(|(token, _)| token.starts_with(&word))
                .flat_map(|(_, list)| list.iter().copied())
                .chain(
                    forms
                        .filter_map(|form| self.postings.get(form))
                        .flatten()
                        .copied(),
                )
                .collect();
            matches.sort_unstable();
            matches.dedup();
            result = Some(match result {
                None => matches,
                Some(previous) => intersect(&previous, &matches),
            });
        }
        let mut result = result.unwrap_or_default();
        result.reverse();
        result
    }
}

/// The folded tokens of a note's title, tags and body.
fn note_tokens(note: &Note) -> Vec<String> {
    let mut out: Vec<String> = tokens(&note.title).collect();
    for tag in &note.tags {
        out.extend(tokens(tag));
    }
    out.extend(tokens(&note.body));
    out
}

fn intersect(a: &[u32], b: &[u32]) -> Vec<u32> {
    let (mut i, mut j, mut out) = (0, 0, Vec::new());
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                out.push(a[i]);
                i += 1;
                j += 1;
            }
        }
    }
    out
}
