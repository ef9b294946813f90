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
    /// The row of `counts` whose non-zero columns are `present` (ascending): `tf ** tf_power * idf`
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
        // present ones alone gives the same order of those, and only they are folded. `present` is
        // ascending, so ties broken by column are the stable order: one integer per column, its score's
        // order in the high half and the column in the low, sorted, gives it
        self.keys.clear();
        self.keys.extend(present.iter().map(|&j| (order_key(score(j)) as u128) << 64 | j as u128));
        let n = if k > 0 { self.keys.len().min(k) } else { self.keys.len() };
        if n < self.keys.len() {
            if n > 0 {
                self.keys.select_nth_unstable(n - 1);
            }
            self.keys.truncate(n);
        }
        self.keys.sort_unstable();
        self.order.clear();
        self.order.extend(self.keys.iter().map(|&key| key as u64 as usize));
        self.weights.clear();
        self.weights.extend(self.order.iter().map(|&j| score(j)));
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
    for j in 0..n {
        let m = (j + 1) as f64;
        if !(share * m < 1.0) || j + 1 >= n {
            continue;
        }
        let cap = share * rest[j] / (1.0 - share * m);
        if cap >= a(j + 1) {
            return cap;
        }
    }
    a(n.saturating_sub(1))
}
