//! A fit's zero with no interval: a bare estimate, which the search does
//! not headline.

use super::{Answer, Method, Search};

impl Search {
    /// The fit put the edge at `answer.rate` but its points could not
    /// bound it: they scatter too much about their line. A rate with no
    /// interval is not what a user can plan with, so:
    ///
    /// - where the zero lies below every measuring point, the line says
    ///   each measuring pass was past the edge: without a settled one, no
    ///   point that could decide it places the edge, and the answer is
    ///   inconclusive (a CI run's llama.cpp search: measuring points at
    ///   5.07 to 5.96 req/s, one unsettled pass at 5.37 among three fails,
    ///   the zero at 4.80; 200 requests at 5.37 then read p90 TTFT 1,281 ms
    ///   against 600);
    /// - where it lies above the highest measuring pass below every
    ///   measuring fail, that pass answers: a rate the server held for as
    ///   many requests as the SLO's percentiles need (on a one-thread
    ///   llama.cpp server measuring points failed at 3.44 to 5.58 req/s and
    ///   passed at 2.13, and the zero, 3.41, sat just under the fail at
    ///   3.44; 600 requests at 3.41 then read p99 TTFT 690 ms against 600).
    ///
    /// A search with no measuring point yet is left to its next point.
    pub(super) fn without_an_interval(&self, answer: &mut Answer) {
        let x0 = answer.rate;
        let measuring = || self.seen.iter().filter(|o| o.measuring);
        if measuring().count() == 0 {
            return;
        }
        let below_all = measuring().all(|o| x0 < o.rate);
        let settled_pass = measuring().any(|o| o.passes() && (o.settled || o.bounded));
        if below_all && !settled_pass {
            answer.inconclusive = true;
            answer.notes.push(format!(
                "inconclusive: the fit puts the edge at {x0:.2} req/s, below every measuring point, with no interval, and no measuring point that passed settled: a longer --search-time measures more points"
            ));
            return;
        }
        let lowest_fail = measuring()
            .filter(|o| !o.passes())
            .map(|o| o.rate)
            .fold(f64::INFINITY, f64::min);
        let pass = measuring()
            .filter(|o| o.passes() && o.rate < lowest_fail)
            .map(|o| o.rate)
            .reduce(f64::max);
        if let Some(pass) = pass.filter(|&p| p < x0) {
            answer.notes.push(format!(
                "the fit puts the edge near {x0:.2} req/s but its points scatter too much to bound it (no interval): the highest rate a measuring point passed at below every measuring fail"
            ));
            answer.rate = pass;
            answer.method = Method::Bracket;
        }
    }
}
