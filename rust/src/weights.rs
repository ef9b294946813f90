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
        // present ones alone gives the same order of those, and only they are folded
        self.order.clear();
        self.order.extend_from_slice(present);
        self.order.sort_by(|&a, &b| score(a).partial_cmp(&score(b)).expect("weights are numbers"));
        let n = if k > 0 { self.order.len().min(k) } else { self.order.len() };
        self.order.truncate(n);
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
