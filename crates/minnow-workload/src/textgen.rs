//! Text-like rows for the compression experiment (E3): compressible the way real tables are,
//! neither random bytes (which never compress) nor zeros (which compress absurdly well).
//!
//! Seed 002 compressed a web application's busiest table 73 %. What made it compressible was
//! ordinary content: titles and bodies written in a natural language, names, e-mail
//! addresses, dates, small counters. This generator makes rows of that kind for the `articles`
//! table ([`table_def`]):
//!
//! | column | type | content |
//! |---|---|---|
//! | `id` | BIGINT UNSIGNED, primary key | `k + 1` for row `k` |
//! | `title` | VARCHAR(200) | 3 to 9 words, the first capitalised |
//! | `body` | VARCHAR(2000) | 40 to 160 words in sentences of 6 to 18 words, with capitals, commas and full stops (about 700 bytes on average) |
//! | `author` | VARCHAR(64) | "First Last" from 48 first names and 48 last names |
//! | `email` | VARCHAR(128) | `first.last<n>@domain`, from the author's name, `n` below 100 and one of 8 domains |
//! | `posted` | DATE | a day between 2005-01-01 and 2014-12-31 |
//! | `votes` | INT UNSIGNED | 0 to 999, small values more likely |
//!
//! **Words.** The vocabulary has [`VOCABULARY`] words: the 120 most common English words
//! first, then English-looking words built from syllables (`"morlan"`, `"tesivo"`, ...),
//! made by a fixed pseudo-random sequence so the vocabulary is the same in every build. Words
//! are drawn by rank with a **Zipf** distribution (probability of rank `r` proportional to
//! `1 / r`), the law word frequencies in natural text follow: "the" is about 11 % of words,
//! the 100 most common about half of them, and a long tail of rare words the rest. That gives
//! the compressor what real text gives it: short, frequently repeated strings and a skewed
//! symbol distribution, with enough rare words that it cannot simply count.
//!
//! **Determinism.** Row `k` depends only on the seed and `k` (each row has its own
//! SplitMix64 stream), so rows can be produced in any order, in parallel, and again later to
//! check them: `row(seed, k)` is always the same row.
//!
//! ```
//! use minnow_workload::textgen;
//!
//! let a = textgen::row(7, 41);
//! assert_eq!(a, textgen::row(7, 41));
//! assert_ne!(a, textgen::row(8, 41));
//! assert_eq!(a.len(), 7); // one value per column
//! ```

use std::sync::OnceLock;

use minnow::{ColumnDef, ColumnType, Database, Date, TableDef, Value};

use crate::WorkloadError;

/// The table's name.
pub const TABLE: &str = "articles";
/// Words in the vocabulary.
pub const VOCABULARY: usize = 4096;

const COMMON: &[&str] = &[
    "the", "of", "and", "to", "a", "in", "is", "it", "you", "that", "he", "was", "for", "on",
    "are", "with", "as", "his", "they", "be", "at", "one", "have", "this", "from", "or", "had",
    "by", "not", "word", "but", "what", "some", "we", "can", "out", "other", "were", "all",
    "there", "when", "up", "use", "your", "how", "said", "an", "each", "she", "which", "do",
    "their", "time", "if", "will", "way", "about", "many", "then", "them", "write", "would",
    "like", "so", "these", "her", "long", "make", "thing", "see", "him", "two", "has", "look",
    "more", "day", "could", "go", "come", "did", "number", "sound", "no", "most", "people", "my",
    "over", "know", "water", "than", "call", "first", "who", "may", "down", "side", "been", "now",
    "find", "any", "new", "work", "part", "take", "get", "place", "made", "live", "where", "after",
    "back", "little", "only", "round", "man", "year", "came", "show", "every", "good",
];

const ONSETS: &[&str] = &[
    "b", "c", "d", "f", "g", "h", "l", "m", "n", "p", "r", "s", "t", "v", "w", "br", "cl", "dr",
    "st", "tr", "sh", "ch", "th", "pl",
];
const VOWELS: &[&str] = &["a", "e", "i", "o", "u", "ea", "ou", "ai"];
const CODAS: &[&str] = &["", "", "", "n", "r", "s", "t", "l", "nd", "st", "ng"];

const FIRST_NAMES: &[&str] = &[
    "james",
    "mary",
    "john",
    "patricia",
    "robert",
    "jennifer",
    "michael",
    "linda",
    "william",
    "elizabeth",
    "david",
    "barbara",
    "richard",
    "susan",
    "joseph",
    "jessica",
    "thomas",
    "sarah",
    "charles",
    "karen",
    "daniel",
    "nancy",
    "matthew",
    "lisa",
    "anthony",
    "betty",
    "mark",
    "margaret",
    "paul",
    "sandra",
    "steven",
    "ashley",
    "andrew",
    "kimberly",
    "joshua",
    "emily",
    "kevin",
    "donna",
    "brian",
    "michelle",
    "george",
    "carol",
    "edward",
    "amanda",
    "ronald",
    "melissa",
    "timothy",
    "deborah",
];
const LAST_NAMES: &[&str] = &[
    "smith",
    "johnson",
    "williams",
    "brown",
    "jones",
    "garcia",
    "miller",
    "davis",
    "rodriguez",
    "martinez",
    "hernandez",
    "lopez",
    "gonzalez",
    "wilson",
    "anderson",
    "thomas",
    "taylor",
    "moore",
    "jackson",
    "martin",
    "lee",
    "perez",
    "thompson",
    "white",
    "harris",
    "sanchez",
    "clark",
    "ramirez",
    "lewis",
    "robinson",
    "walker",
    "young",
    "allen",
    "king",
    "wright",
    "scott",
    "torres",
    "nguyen",
    "hill",
    "flores",
    "green",
    "adams",
    "nelson",
    "baker",
    "hall",
    "rivera",
    "campbell",
    "mitchell",
];
const DOMAINS: &[&str] = &[
    "example.com",
    "mail.example.org",
    "webmail.example.net",
    "post.example.com",
    "inbox.example.org",
    "users.example.net",
    "example.co.uk",
    "example.de",
];

/// The `articles` table: see the module docs for every column.
pub fn table_def() -> TableDef {
    TableDef::new(TABLE)
        .column(ColumnDef::new("id", ColumnType::U64))
        .column(ColumnDef::new("title", ColumnType::Var(200)))
        .column(ColumnDef::new("body", ColumnType::Var(2000)))
        .column(ColumnDef::new("author", ColumnType::Var(64)))
        .column(ColumnDef::new("email", ColumnType::Var(128)))
        .column(ColumnDef::new("posted", ColumnType::Date))
        .column(ColumnDef::new("votes", ColumnType::U32))
        .primary_key(&["id"])
}

/// Row `k` (0-based, in primary key order) for `seed`: one value per column of
/// [`table_def`].
pub fn row(seed: u64, k: u64) -> Vec<Value> {
    let mut rng = SplitMix64::new(seed ^ k.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let title = title(&mut rng);
    let body = body(&mut rng);
    let first = pick(&mut rng, FIRST_NAMES);
    let last = pick(&mut rng, LAST_NAMES);
    let author = format!("{} {}", capitalised(first), capitalised(last));
    let email = format!(
        "{first}.{last}{}@{}",
        rng.below(100),
        pick(&mut rng, DOMAINS)
    );
    let posted = date(rng.below(3652));
    // Small values more likely: the minimum of two uniform draws.
    let votes = rng.below(1000).min(rng.below(1000));
    vec![
        Value::UInt(k + 1),
        Value::Bytes(title.into_bytes()),
        Value::Bytes(body.into_bytes()),
        Value::Bytes(author.into_bytes()),
        Value::Bytes(email.into_bytes()),
        posted,
        Value::UInt(votes),
    ]
}

/// Creates the `articles` table in `db` and bulk-loads `rows` rows of `seed`.
pub fn load(db: &Database, seed: u64, rows: u64) -> Result<(), WorkloadError> {
    let t = db.create_table(table_def())?;
    t.load((0..rows).map(|k| row(seed, k)))?;
    Ok(())
}

/// The vocabulary, most frequent first (the same in every build).
pub fn vocabulary() -> &'static [String] {
    &tables().words
}

struct Tables {
    words: Vec<String>,
    /// `cumulative[r]` = sum of `1 / (i + 1)` for `i <= r`.
    cumulative: Vec<f64>,
}

fn tables() -> &'static Tables {
    static TABLES: OnceLock<Tables> = OnceLock::new();
    TABLES.get_or_init(|| {
        let mut words: Vec<String> = COMMON.iter().map(|w| (*w).to_owned()).collect();
        let mut seen: std::collections::HashSet<String> = words.iter().cloned().collect();
        let mut rng = SplitMix64::new(0x7E47_0000_0000_0003);
        while words.len() < VOCABULARY {
            let syllables = 1 + rng.below(3);
            let mut w = String::new();
            for _ in 0..syllables {
                w.push_str(pick(&mut rng, ONSETS));
                w.push_str(pick(&mut rng, VOWELS));
                w.push_str(pick(&mut rng, CODAS));
            }
            if seen.insert(w.clone()) {
                words.push(w);
            }
        }
        let mut sum = 0.0;
        let cumulative = (0..words.len())
            .map(|r| {
                sum += 1.0 / (r + 1) as f64;
                sum
            })
            .collect();
        Tables { words, cumulative }
    })
}

/// A word drawn by Zipf rank.
fn word(rng: &mut SplitMix64) -> &'static str {
    let t = tables();
    let total = t.cumulative.last().copied().unwrap_or(1.0);
    let u = rng.unit() * total;
    let rank = t.cumulative.partition_point(|&c| c < u);
    t.words
        .get(rank)
        .or_else(|| t.words.last())
        .map_or("the", String::as_str)
}

fn title(rng: &mut SplitMix64) -> String {
    let n = 3 + rng.below(7);
    let words: Vec<&str> = (0..n).map(|_| word(rng)).collect();
    capitalised(&words.join(" "))
}

fn body(rng: &mut SplitMix64) -> String {
    let target = 40 + rng.below(121);
    let mut out = String::new();
    let mut written = 0;
    while written < target {
        let len = (6 + rng.below(13)).min(target - written);
        let mut sentence = String::new();
        for i in 0..len {
            if i > 0 {
                sentence.push_str(if rng.below(8) == 0 { ", " } else { " " });
            }
            sentence.push_str(word(rng));
        }
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(&capitalised(&sentence));
        out.push('.');
        written += len;
    }
    out
}

fn capitalised(s: &str) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(c) => c.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// 2005-01-01 plus `days` days (proleptic Gregorian calendar).
fn date(mut days: u64) -> Value {
    let mut year = 2005u16;
    loop {
        let leap =
            (year.is_multiple_of(4) && !year.is_multiple_of(100)) || year.is_multiple_of(400);
        let len = if leap { 366 } else { 365 };
        if days < len {
            let months = [
                31,
                if leap { 29 } else { 28 },
                31,
                30,
                31,
                30,
                31,
                31,
                30,
                31,
                30,
                31,
            ];
            let mut month = 1u8;
            for m in months {
                if days < m {
                    break;
                }
                days -= m;
                month += 1;
            }
            let day = u8::try_from(days + 1).unwrap_or(1);
            // Always a valid date by construction (the tests check every day of the range).
            return Date::new(year, month, day).map_or(Value::Null, Value::Date);
        }
        days -= len;
        year += 1;
    }
}

fn pick<'a>(rng: &mut SplitMix64, from: &[&'a str]) -> &'a str {
    let n = from.len() as u64;
    from.get(rng.below(n) as usize).copied().unwrap_or("")
}

/// SplitMix64 (Steele, Lea and Flood): a tiny generator whose output is fixed by its
/// definition, so rows never change when a dependency does.
struct SplitMix64(u64);

impl SplitMix64 {
    fn new(seed: u64) -> SplitMix64 {
        SplitMix64(seed)
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (0 when `n` is 0); the bias for small `n` is below 2^-50.
    fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            ((u128::from(self.next()) * u128::from(n)) >> 64) as u64
        }
    }

    /// Uniform in `[0, 1)`.
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_for_a_seed() {
        for k in 0..50 {
            assert_eq!(row(1, k), row(1, k));
        }
        assert_ne!(row(1, 3), row(2, 3));
        assert_ne!(row(1, 3), row(1, 4));
        // Pinned: a change to the generator changes E3's numbers and must be deliberate.
        let Value::Bytes(title) = &row(42, 0)[1] else {
            panic!("title is bytes")
        };
        assert_eq!(String::from_utf8_lossy(title), PINNED_TITLE);
    }

    const PINNED_TITLE: &str = "Of is was the maingdrean to dil was";

    #[test]
    fn vocabulary_is_fixed_and_distinct() {
        let v = vocabulary();
        assert_eq!(v.len(), VOCABULARY);
        let distinct: std::collections::HashSet<_> = v.iter().collect();
        assert_eq!(distinct.len(), VOCABULARY);
        assert_eq!(v[0], "the");
    }

    #[test]
    fn words_are_zipf_like() {
        let mut rng = SplitMix64::new(5);
        let n = 100_000;
        let the = (0..n).filter(|_| word(&mut rng) == "the").count();
        // 1 / H(4096) = 0.115.
        assert!((10_000..13_000).contains(&the), "{the}");
    }

    #[test]
    fn rows_look_like_text() {
        for k in 0..200 {
            let r = row(9, k);
            assert_eq!(r[0], Value::UInt(k + 1));
            let Value::Bytes(body) = &r[2] else { panic!() };
            assert!(body.len() > 150 && body.len() <= 2000, "{}", body.len());
            assert!(body.ends_with(b"."));
            let Value::Bytes(email) = &r[4] else { panic!() };
            assert!(email.contains(&b'@'));
            assert!(matches!(r[5], Value::Date(_)));
            assert!(matches!(r[6], Value::UInt(v) if v < 1000));
        }
    }

    #[test]
    fn every_day_of_the_range_is_a_date() {
        for d in 0..3652 {
            assert!(matches!(date(d), Value::Date(_)), "day {d}");
        }
    }

    #[test]
    fn loads_into_a_table() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::create(dir.path(), minnow::Config::default()).unwrap();
        load(&db, 3, 300).unwrap();
        assert_eq!(db.check().unwrap().rows[TABLE], 300);
    }
}
