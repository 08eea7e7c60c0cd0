//! The `o200k_base` vocabulary as the binary ships it: every token's bytes in rank order, deflated,
//! and built into tiktoken-rs's BPE on first use.
//!
//! tiktoken-rs embeds the vocabulary as its `.tiktoken` text, one base64 token and its rank a line:
//! 3.6 MB of the `agent` binary. Ranks run 0, 1, 2, … without a gap, so they need not be stored;
//! the bytes, each behind a one-byte length, are 1.6 MB, and deflated 1.0 MB (the binary's size
//! budget; `docs/models.md`). The tables tiktoken-rs builds from them are the same, which the
//! tests check token by token against tiktoken-rs's own `o200k_base()`.

use std::sync::LazyLock;

use tiktoken_rs::{CoreBPE, ENDOFPROMPT, ENDOFTEXT, O200K_BASE_PAT_STR, Rank};

/// The deflated vocabulary (`data/o200k_base.deflate`; its notice is `data/NOTICE`).
const O200K_BASE: &[u8] = include_bytes!("../data/o200k_base.deflate");

/// How many ordinary tokens `o200k_base` has; the special tokens come after them.
const O200K_BASE_TOKENS: usize = 199_998;

/// The inflated table is 1.6 MB; a corrupt file stops here rather than growing without end.
const MAX_INFLATED: usize = 2 << 20;

/// The `o200k_base` encoder, built on the first call; `None` only if the shipped table were
/// damaged, which the tests below rule out for every build (the counters then estimate).
pub(crate) fn o200k_base() -> Option<&'static CoreBPE> {
    static BPE: LazyLock<Option<CoreBPE>> = LazyLock::new(|| {
        let table =
            miniz_oxide::inflate::decompress_to_vec_with_limit(O200K_BASE, MAX_INFLATED).ok()?;
        let encoder = ranks(&table)?;
        // The maps take tiktoken-rs's hasher, which `CoreBPE::new` names; `collect` infers it.
        let special = [(ENDOFTEXT.to_owned(), 199_999), (ENDOFPROMPT.to_owned(), 200_018)];
        CoreBPE::new(
            encoder.into_iter().collect(),
            special.into_iter().collect(),
            O200K_BASE_PAT_STR,
        )
        .ok()
    });
    BPE.as_ref()
}

/// Each token's bytes with its rank, read from the inflated table; `None` when the table is cut
/// short or holds another count of tokens.
fn ranks(mut table: &[u8]) -> Option<Vec<(Vec<u8>, Rank)>> {
    let mut tokens = Vec::with_capacity(O200K_BASE_TOKENS);
    while let Some((&len, rest)) = table.split_first() {
        let (token, rest) = rest.split_at_checked(usize::from(len))?;
        tokens.push((token.to_vec(), Rank::try_from(tokens.len()).ok()?));
        table = rest;
    }
    (tokens.len() == O200K_BASE_TOKENS).then_some(tokens)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// tiktoken-rs's own `o200k_base`, parsed from its embedded text: the reference. It is linked
    /// into this test binary only, not into a program that counts tokens.
    fn reference() -> &'static CoreBPE {
        tiktoken_rs::o200k_base_singleton()
    }

    /// The table as `data/o200k_base.deflate` holds it, made from the reference.
    fn table_of(bpe: &CoreBPE) -> Vec<u8> {
        let mut table = Vec::new();
        for rank in 0..O200K_BASE_TOKENS {
            let token = bpe.decode_bytes(&[Rank::try_from(rank).unwrap()]).unwrap();
            table.push(u8::try_from(token.len()).unwrap());
            table.extend_from_slice(&token);
        }
        table
    }

    #[test]
    fn the_shipped_table_holds_every_token_of_tiktoken_rs_at_its_rank() {
        let expected = table_of(reference());
        let shipped = miniz_oxide::inflate::decompress_to_vec_with_limit(O200K_BASE, MAX_INFLATED)
            .unwrap_or_default();
        if shipped != expected && std::env::var_os("AGENT_BLESS_VOCABULARY").is_some() {
            let deflated = miniz_oxide::deflate::compress_to_vec(&expected, 10);
            let path = concat!(env!("CARGO_MANIFEST_DIR"), "/data/o200k_base.deflate");
            std::fs::write(path, deflated).unwrap();
            panic!("wrote {path}: build again to ship it");
        }
        assert!(
            shipped == expected,
            "data/o200k_base.deflate is not tiktoken-rs's o200k_base (after a tiktoken-rs \
             update, run this test with AGENT_BLESS_VOCABULARY=1)"
        );
        // A token that is not an ordinary one is not in the table.
        assert!(reference().decode_bytes(&[Rank::try_from(O200K_BASE_TOKENS).unwrap()]).is_err());
    }

    #[test]
    fn the_shipped_encoder_counts_as_tiktoken_rs_does() {
        let texts = [
            "",
            "hello world",
            "fn main() {\n    println!(\"héllo, 世界\");\n}\n",
            "<|endoftext|> is ordinary text here",
            "   \t\n\n  trailing   spaces  ",
            "数学は楽しい。Ünïcödé ✓ 🦀🦀🦀",
        ];
        for text in texts {
            assert_eq!(
                o200k_base().unwrap().encode_ordinary(text),
                reference().encode_ordinary(text),
                "{text:?}"
            );
        }
        assert_eq!(
            o200k_base().unwrap().encode_with_special_tokens("a<|endoftext|>b"),
            reference().encode_with_special_tokens("a<|endoftext|>b")
        );
    }

    #[test]
    fn a_cut_or_padded_table_is_refused() {
        let table = table_of(reference());
        assert!(ranks(&table).is_some());
        assert_eq!(ranks(&table[..table.len() - 1]), None);
        let mut padded = table.clone();
        padded.extend_from_slice(&[1, b'x']);
        assert_eq!(ranks(&padded), None);
    }
}
