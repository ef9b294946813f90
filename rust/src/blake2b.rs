//! BLAKE2b (RFC 7693), unkeyed, as `hashlib.blake2b(data, digest_size=n).hexdigest()` gives it: the
//! content and keyword digests of `fingerprint/digest.py`, taken where the rest of a document's
//! fingerprint is, without the GIL.

const IV: [u64; 8] = [
    0x6a09_e667_f3bc_c908, 0xbb67_ae85_84ca_a73b, 0x3c6e_f372_fe94_f82b, 0xa54f_f53a_5f1d_36f1,
    0x510e_527f_ade6_82d1, 0x9b05_688c_2b3e_6c1f, 0x1f83_d9ab_fb41_bd6b, 0x5be0_cd19_137e_2179,
];

const SIGMA: [[usize; 16]; 12] = [
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15],
    [14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3],
    [11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4],
    [7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8],
    [9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13],
    [2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9],
    [12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11],
    [13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10],
    [6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5],
    [10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0],
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15],
    [14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3],
];

#[inline(always)]
fn g(v: &mut [u64; 16], a: usize, b: usize, c: usize, d: usize, x: u64, y: u64) {
    v[a] = v[a].wrapping_add(v[b]).wrapping_add(x);
    v[d] = (v[d] ^ v[a]).rotate_right(32);
    v[c] = v[c].wrapping_add(v[d]);
    v[b] = (v[b] ^ v[c]).rotate_right(24);
    v[a] = v[a].wrapping_add(v[b]).wrapping_add(y);
    v[d] = (v[d] ^ v[a]).rotate_right(16);
    v[c] = v[c].wrapping_add(v[d]);
    v[b] = (v[b] ^ v[c]).rotate_right(63);
}

/// One block into the state; `t`: the bytes hashed so far, this block's included.
fn compress(h: &mut [u64; 8], block: &[u8; 128], t: u128, last: bool) {
    let mut m = [0u64; 16];
    for (i, w) in m.iter_mut().enumerate() {
        *w = u64::from_le_bytes(block[8 * i..8 * i + 8].try_into().expect("8 bytes"));
    }
    let mut v = [0u64; 16];
    v[..8].copy_from_slice(h);
    v[8..].copy_from_slice(&IV);
    v[12] ^= t as u64;
    v[13] ^= (t >> 64) as u64;
    if last {
        v[14] = !v[14];
    }
    for s in &SIGMA {
        g(&mut v, 0, 4, 8, 12, m[s[0]], m[s[1]]);
        g(&mut v, 1, 5, 9, 13, m[s[2]], m[s[3]]);
        g(&mut v, 2, 6, 10, 14, m[s[4]], m[s[5]]);
        g(&mut v, 3, 7, 11, 15, m[s[6]], m[s[7]]);
        g(&mut v, 0, 5, 10, 15, m[s[8]], m[s[9]]);
        g(&mut v, 1, 6, 11, 12, m[s[10]], m[s[11]]);
        g(&mut v, 2, 7, 8, 13, m[s[12]], m[s[13]]);
        g(&mut v, 3, 4, 9, 14, m[s[14]], m[s[15]]);
    }
    for i in 0..8 {
        h[i] ^= v[i] ^ v[i + 8];
    }
}

/// An unkeyed BLAKE2b hash of `size` bytes (1 to 64) being fed.
pub struct Blake2b {
    h: [u64; 8],
    block: [u8; 128],
    filled: usize,
    t: u128,
    size: usize,
}

impl Blake2b {
    pub fn new(size: usize) -> Self {
        assert!((1..=64).contains(&size), "BLAKE2b gives 1 to 64 bytes");
        let mut h = IV;
        h[0] ^= 0x0101_0000 ^ size as u64;
        Blake2b { h, block: [0; 128], filled: 0, t: 0, size }
    }

    pub fn update(&mut self, mut data: &[u8]) {
        while !data.is_empty() {
            // a full block is compressed only once more data follows: the last one is final
            if self.filled == 128 {
                self.t += 128;
                compress(&mut self.h, &self.block, self.t, false);
                self.filled = 0;
            }
            let n = (128 - self.filled).min(data.len());
            self.block[self.filled..self.filled + n].copy_from_slice(&data[..n]);
            self.filled += n;
            data = &data[n..];
        }
    }

    /// The digest as lower-case hex (`hexdigest()`).
    pub fn hex(mut self) -> String {
        self.t += self.filled as u128;
        self.block[self.filled..].fill(0);
        compress(&mut self.h, &self.block, self.t, true);
        let mut out = String::with_capacity(2 * self.size);
        for byte in self.h.iter().flat_map(|w| w.to_le_bytes()).take(self.size) {
            out.push(char::from_digit(u32::from(byte >> 4), 16).expect("a hex digit"));
            out.push(char::from_digit(u32::from(byte & 15), 16).expect("a hex digit"));
        }
        out
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
