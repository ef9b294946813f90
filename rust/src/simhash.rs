//! SimHash folding in the fixed order of `vote_sums` in `fingerprint/simhash.py`: terms four at a time,
//! `((a + b) + c) + d`, the groups added in turn, then the last `n mod 4` one by one. Every vote then
//! has the sign the reference gives it, ties included.

pub fn fold(hashes: &[u64], weights: &[f64]) -> u64 {
    if hashes.is_empty() {
        return 0;
    }
    let prod = |i: usize, bit: usize| -> f64 {
        if (hashes[i] >> (63 - bit)) & 1 == 1 { weights[i] } else { -weights[i] }
    };
    let n = hashes.len();
    let full = n - n % 4;
    let mut votes = [0.0f64; 64];
    for g in (0..full).step_by(4) {
        for (bit, v) in votes.iter_mut().enumerate() {
            let s = ((prod(g, bit) + prod(g + 1, bit)) + prod(g + 2, bit)) + prod(g + 3, bit);
            *v = if g == 0 { s } else { *v + s };
        }
    }
    for i in full..n {
        for (bit, v) in votes.iter_mut().enumerate() {
            *v += prod(i, bit);
        }
    }
    votes.iter().enumerate().fold(0u64, |fp, (bit, &v)| if v > 0.0 { fp | 1 << (63 - bit) } else { fp })
}
