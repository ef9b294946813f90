//! `weigh_rows` of `text/weights.py` for one row: the same IEEE operations in the same order, so the
//! weights are bit-identical to the reference's.

/// Columns to fold, heaviest first, and their weights: `tf ** tf_power * idf` over the row's total,
/// the top `k` (0 = all), each capped at `max_share` of the capped total.
pub fn weigh_row(counts: &[i64], idf: &[f64], k: usize, tf_power: f64, max_share: f64) -> (Vec<usize>, Vec<f64>) {
    let width = counts.len();
    let total: i64 = counts.iter().sum();
    let pow = |c: i64| -> f64 {
        if tf_power == 1.0 {
            c as f64
        } else if c == 0 {
            0.0
        } else {
            (c as f64).powf(tf_power)
        }
    };
    let norm = if tf_power == 1.0 { total as f64 } else { (total as f64).powf(tf_power) };
    let scored: Vec<f64> = (0..width).map(|j| if counts[j] == 0 { f64::INFINITY } else { -pow(counts[j]) * idf[j] }).collect();
    // the reference sorts every column, the row's absent terms (score +inf) last, stably; sorting the
    // present ones alone gives the same order of those, and only they are folded
    let mut order: Vec<usize> = (0..width).filter(|&j| counts[j] != 0).collect();
    order.sort_by(|&a, &b| scored[a].partial_cmp(&scored[b]).expect("weights are numbers"));
    let n = if k > 0 { order.len().min(k) } else { order.len() };
    order.truncate(n);
    let mut w: Vec<f64> = order.iter().map(|&j| scored[j]).collect();
    if max_share < 1.0 && n > 1 {
        let cap = share_cap(&w, n, width, max_share);
        for x in w.iter_mut() {
            *x = x.max(-cap);
        }
    }
    let weights = w.iter().map(|&x| -x / norm).collect();
    (order, weights)
}

/// `_share_caps` for one row: `w` holds the row's first `n` sorted (negative) scores.
fn share_cap(w: &[f64], n: usize, width: usize, share: f64) -> f64 {
    let a = |j: usize| if j < n { -w[j] } else { 0.0 };
    // rest[j] = a[n-1] + a[n-2] + ... + a[j+1], summed in that order
    let mut rest = vec![0.0f64; width];
    let mut acc = 0.0f64;
    for j in (0..width.saturating_sub(1)).rev() {
        acc += a(j + 1);
        rest[j] = acc;
    }
    for j in 0..width {
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
