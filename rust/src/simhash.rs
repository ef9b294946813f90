//! SimHash folding in the fixed order of `vote_sums` in `fingerprint/simhash.py`: terms four at a time,
//! `((a + b) + c) + d`, the groups added in turn, then the last `n mod 4` one by one. Every vote then
//! has the sign the reference gives it, ties included.

/// `w` when bit `63 - bit` of `h` is set, else `-w` (a sign flip: exact, and branch-free).
#[inline(always)]
fn vote(w: u64, h: u64, bit: usize) -> f64 {
    f64::from_bits(w ^ ((!h >> (63 - bit)) & 1) << 63)
}

pub fn fold(hashes: &[u64], weights: &[f64]) -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU has the features the function is compiled for (checked just above)
            return unsafe { fold_avx512(hashes, weights) };
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: as above
            return unsafe { fold_avx2(hashes, weights) };
        }
    }
    fold_any(hashes, weights)
}

/// [`fold`] where the CPU shifts each lane by its own count (AVX-512: the 64 votes of a term in eight
/// registers). The same additions in the same order, lane by lane: the same sums.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn fold_avx512(hashes: &[u64], weights: &[f64]) -> u64 {
    fold_any(hashes, weights)
}

/// [`fold`] with AVX2 (four lanes).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn fold_avx2(hashes: &[u64], weights: &[f64]) -> u64 {
    fold_any(hashes, weights)
}

#[inline(always)]
fn fold_any(hashes: &[u64], weights: &[f64]) -> u64 {
    if hashes.is_empty() {
        return 0;
    }
    let n = hashes.len();
    let full = n - n % 4;
    let mut votes = [0.0f64; 64];
    for g in (0..full).step_by(4) {
        let (h, w) = (&hashes[g..g + 4], &weights[g..g + 4]);
        let wb = [w[0].to_bits(), w[1].to_bits(), w[2].to_bits(), w[3].to_bits()];
        let mut group = [0.0f64; 64];
        for (bit, s) in group.iter_mut().enumerate() {
            *s = ((vote(wb[0], h[0], bit) + vote(wb[1], h[1], bit)) + vote(wb[2], h[2], bit)) + vote(wb[3], h[3], bit);
        }
        if g == 0 {
            votes = group;
        } else {
            for (v, s) in votes.iter_mut().zip(group) {
                *v += s;
            }
        }
    }
    for i in full..n {
        let wb = weights[i].to_bits();
        for (bit, v) in votes.iter_mut().enumerate() {
            *v += vote(wb, hashes[i], bit);
        }
    }
    votes.iter().enumerate().fold(0u64, |fp, (bit, &v)| if v > 0.0 { fp | 1 << (63 - bit) } else { fp })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_build_folds_alike() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for n in [0, 1, 3, 4, 5, 8, 31, 64, 200] {
            let hashes: Vec<u64> = (0..n).map(|_| next()).collect();
            // weights of many magnitudes and signs, ties too, so that rounding shows
            let weights: Vec<f64> = (0..n).map(|i| ((next() % 2001) as f64 - 1000.0) / (1 + i % 7) as f64 * 1e-3).collect();
            let want = fold_any(&hashes, &weights);
            assert_eq!(fold(&hashes, &weights), want);
            #[cfg(target_arch = "x86_64")]
            if std::arch::is_x86_feature_detected!("avx2") {
                assert_eq!(unsafe { fold_avx2(&hashes, &weights) }, want);
            }
        }
    }
}
