//! `weigh_rows` of `text/weights.py` for one row: the same IEEE operations in the same order, so the
//! weights are bit-identical to the reference's.

/// `c ** tf_power` as the reference computes a count's power.
pub fn tf_pow(c: i64, tf_power: f64) -> f64 {
    if tf_power == 1.0 {
        c as f64
    } else if c == 0 {
        0.0
    } else {
        (c as f64).powf(tf_power)
    }
}

/// One row's columns to fold and their weights, with buffers kept from row to row.
#[derive(Default)]
pub struct Weighing {
    /// Columns to fold, heaviest first.
    pub order: Vec<usize>,
    /// Their weights.
    pub weights: Vec<f64>,
    rest: Vec<f64>,
    keys: Vec<u128>,
    short: Vec<u64>,
    /// per column, its score in the row being weighed (read again for the weights: one load, not three)
    scores: Vec<f64>,
}

/// An integer in the order of the number `x` (not NaN) as `partial_cmp` orders numbers: -0.0 and 0.0
/// give one key.
#[inline(always)]
fn order_key(x: f64) -> u64 {
    debug_assert!(!x.is_nan(), "weights are numbers");
    let bits = (x + 0.0).to_bits(); // -0.0 + 0.0 is 0.0
    if bits >> 63 == 1 { !bits } else { bits | 1 << 63 }
}

impl Weighing {
    /// The row of `counts` whose non-zero columns are `present` (in any order): `tf ** tf_power * idf`
    /// over the row's total, the top `k` (0 = all), each capped at `max_share` of the capped total.
    /// `pows[c]` is [`tf_pow`] of `c`.
    #[allow(clippy::too_many_arguments)]
    pub fn row(
        &mut self, counts: &[i64], present: &[usize], idf: &[f64], pows: &[f64], k: usize, tf_power: f64,
        max_share: f64,
    ) {
        let total: i64 = present.iter().map(|&j| counts[j]).sum();
        let norm = if tf_power == 1.0 { total as f64 } else { (total as f64).powf(tf_power) };
        let score = |j: usize| -pows[counts[j] as usize] * idf[j];
        // the reference sorts every column, the row's absent terms (score +inf) last, stably; sorting the
        // present ones alone gives the same order of those, and only they are folded: by score, ties by
        // column (the stable order)
        let n = if k > 0 { present.len().min(k) } else { present.len() };
        let top = present.iter().max().map_or(0, |&j| j);
        let bits = usize::BITS - top.leading_zeros();
        self.order.clear();
        let short = n == present.len() && bits <= 16;
        if short {
            self.sort_short(present, top + 1, bits, score);
        } else {
            // one integer per column, its score's order in the high half and the column in the low
            self.keys.clear();
            self.keys.extend(present.iter().map(|&j| (order_key(score(j)) as u128) << 64 | j as u128));
            if n < self.keys.len() {
                if n > 0 {
                    self.keys.select_nth_unstable(n - 1);
                }
                self.keys.truncate(n);
            }
            self.keys.sort_unstable();
            self.order.extend(self.keys.iter().map(|&key| key as u64 as usize));
        }
        self.weights.clear();
        if short {
            // `sort_short` kept each column's score
            let scores = &self.scores;
            self.weights.extend(self.order.iter().map(|&j| scores[j]));
        } else {
            self.weights.extend(self.order.iter().map(|&j| score(j)));
        }
        if max_share < 1.0 && n > 1 {
            let cap = share_cap(&self.weights, n, max_share, &mut self.rest);
            for x in self.weights.iter_mut() {
                *x = x.max(-cap);
            }
        }
        for x in self.weights.iter_mut() {
            *x = -*x / norm;
        }
    }
}

impl Weighing {
    /// `order`: all of `present` (columns below `width`, and below `1 << bits`, `bits` at most 16) by
    /// score, ties by column, and each column's score in `scores`. One integer per column, its score's
    /// order key with the low `bits` bits replaced by the column, is sorted (a single-word sort); columns
    /// whose keys then tie on the rest are re-sorted by their whole keys where these differ.
    #[inline]
    fn sort_short(&mut self, present: &[usize], width: usize, bits: u32, score: impl Fn(usize) -> f64) {
        let low = (1u64 << bits) - 1;
        if self.scores.len() < width {
            self.scores.resize(width, 0.0);
        }
        self.short.clear();
        for &j in present {
            let x = score(j);
            self.scores[j] = x;
            self.short.push(order_key(x) & !low | j as u64);
        }
        self.short.sort_unstable();
        let mut i = 0;
        while i < self.short.len() {
            let high = self.short[i] & !low;
            let mut e = i + 1;
            while e < self.short.len() && self.short[e] & !low == high {
                e += 1;
            }
            let run = &mut self.short[i..e];
            let full = |k: u64| order_key(self.scores[(k & low) as usize]);
            let first = full(run[0]);
            if run.len() > 1 && run.iter().any(|&k| full(k) != first) {
                run.sort_unstable_by_key(|&k| (full(k), k & low));
            }
            i = e;
        }
        self.order.extend(self.short.iter().map(|&k| (k & low) as usize));
    }
}

/// `_share_caps` for one row: `w` holds the row's first `n` sorted (negative) scores. The reference
/// runs over every column of the table; past the first `n` its terms are zeros, which change no sum
/// and are never a candidate, so the first `n` decide alone.
fn share_cap(w: &[f64], n: usize, share: f64, rest: &mut Vec<f64>) -> f64 {
    let a = |j: usize| if j < n { -w[j] } else { 0.0 };
    // rest[j] = a[n-1] + a[n-2] + ... + a[j+1], summed in that order
    rest.clear();
    rest.resize(n, 0.0);
    let mut acc = 0.0f64;
    for j in (0..n.saturating_sub(1)).rev() {
        acc += a(j + 1);
        rest[j] = acc;
    }
    for (j, &after) in rest.iter().enumerate() {
        let m = (j + 1) as f64;
        let below = share * m < 1.0; // false for NaN too
        if !below || j + 1 >= n {
            continue;
        }
        let cap = share * after / (1.0 - share * m);
        if cap >= a(j + 1) {
            return cap;
        }
    }
    a(n.saturating_sub(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_order_by_score_then_column() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut weigh = Weighing::default();
        for width in [1usize, 2, 5, 40, 300, 5000, 70000] {
            // IDF values with many ties and some a unit in the last place apart (the short key's tie runs)
            let base = [3.5f64, 7.25, 11.0, 13.9];
            let idf: Vec<f64> = (0..width)
                .map(|_| {
                    let v = base[(next() % 4) as usize];
                    match next() % 4 {
                        0 => f64::from_bits(v.to_bits() + next() % 3),
                        1 => v + (next() % 1000) as f64 * 1e-3,
                        _ => v,
                    }
                })
                .collect();
            let counts: Vec<i64> = (0..width).map(|_| (next() % 4) as i64).collect();
            let mut present: Vec<usize> = (0..width).filter(|&j| counts[j] > 0).collect();
            // any order of the present columns
            for i in (1..present.len()).rev() {
                present.swap(i, (next() % (i as u64 + 1)) as usize);
            }
            let pows: Vec<f64> = (0..4).map(|c| tf_pow(c, 3.0)).collect();
            for k in [0, 3] {
                weigh.row(&counts, &present, &idf, &pows, k, 3.0, 0.2);
                let score = |j: usize| -pows[counts[j] as usize] * idf[j];
                let mut want = present.clone();
                want.sort_by(|&a, &b| score(a).partial_cmp(&score(b)).unwrap().then(a.cmp(&b)));
                want.truncate(if k > 0 { k.min(want.len()) } else { want.len() });
                assert_eq!(weigh.order, want, "width {width} k {k}");
                // uncapped, each weight is its column's score over the row's norm, bit for bit
                weigh.row(&counts, &present, &idf, &pows, k, 3.0, 1.0);
                let total: i64 = present.iter().map(|&j| counts[j]).sum();
                let norm = (total as f64).powf(3.0);
                let bits: Vec<u64> = weigh.weights.iter().map(|w| w.to_bits()).collect();
                let want: Vec<u64> = want.iter().map(|&j| (-score(j) / norm).to_bits()).collect();
                assert_eq!(bits, want, "width {width} k {k}");
            }
        }
    }
}
