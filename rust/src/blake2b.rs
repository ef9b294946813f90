//! `hashlib.blake2b(..., digest_size=n).hexdigest()`, through RustCrypto's `blake2` (unkeyed, no salt).

use blake2::digest::{Update, VariableOutput};
use blake2::Blake2bVar;

/// An incremental BLAKE2b of `size` bytes of output (1 to 64), as `hashlib.blake2b(digest_size=size)`.
pub struct Blake2b {
    inner: Blake2bVar,
}

impl Blake2b {
    pub fn new(size: usize) -> Self {
        Blake2b { inner: Blake2bVar::new(size).expect("a digest size of 1 to 64 bytes") }
    }

    pub fn update(&mut self, data: &[u8]) {
        self.inner.update(data);
    }

    /// The digest as lower-case hexadecimal digits (`hexdigest()`).
    pub fn hex(self) -> String {
        let mut out = vec![0u8; self.inner.output_size()];
        self.inner.finalize_variable(&mut out).expect("a buffer of the output size");
        crate::hex::to_hex(&out)
    }
}

/// `hashlib.blake2b(data, digest_size=size).hexdigest()`.
pub fn hex_digest(data: &[u8], size: usize) -> String {
    let mut b = Blake2b::new(size);
    b.update(data);
    b.hex()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_digests() {
        // RFC 7693, appendix A, and hashlib
        assert_eq!(
            hex_digest(b"abc", 64),
            "ba80a53f981c4d0d6a2797b69f12f6e94c212f14685ac4b74b12bb6fdbffa2d1\
             7d87c5392aab792dc252d5de4533cc9518d38aa8dbf1925ab92386edd4009923"
        );
        assert_eq!(hex_digest(b"", 8), "e4a6a0577479b2b4");
    }
}
