//! The limits a strict target puts on one request's strict tools *together* (Anthropic: how many
//! strict tools, optional parameters and union-typed parameters a request may hold), and the
//! budget that admits a dispatcher's tools against them in the documented order.
//!
//! The numbers, what counts toward each and the documents they come from live in the provider's
//! file ([`anthropic`](super::anthropic)); the order in which tools are admitted, and what
//! happens to the others, is in the [module docs](super) ("Strict limits"). Limits on one
//! tool's schema alone (OpenAI's) are not here: the provider's strict transform checks them like
//! any other part of its subset.

use serde_json::Value;

/// What one strict tool adds to a request's totals.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Load {
    /// Strict tools: 1.
    pub(crate) tools: usize,
    /// Optional parameters: properties not listed in their object's `required`, counted through
    /// the whole schema.
    pub(crate) optional: usize,
    /// Union-typed parameters: schemas with `anyOf` (or `oneOf`) or a `type` array of more than
    /// one type, counted through the whole schema.
    pub(crate) unions: usize,
}

impl Load {
    fn plus(self, other: Load) -> Load {
        Load {
            tools: self.tools + other.tools,
            optional: self.optional + other.optional,
            unions: self.unions + other.unions,
        }
    }
}

/// One strict target's limits on a request's strict tools together.
#[derive(Clone, Copy)]
pub(crate) struct RequestLimits {
    /// Strict tools per request.
    pub(crate) tools: usize,
    /// Optional parameters across the request's strict tools.
    pub(crate) optional: usize,
    /// Union-typed parameters across the request's strict tools.
    pub(crate) unions: usize,
    /// Who sets the limits, as a reason names them: `Anthropic strict tool use`.
    pub(crate) who: &'static str,
    /// The [`Load`] of one tool's strict entry (the provider's own wire format).
    pub(crate) load: fn(&Value) -> Load,
}

/// One counter of a [`Load`], as reasons name it.
struct Counter {
    /// Whether it counts the tools themselves (a reason then says how many the request already
    /// holds, not what the tool adds).
    tools: bool,
    /// What is counted, one and several: `optional parameter`, `optional parameters`.
    one: &'static str,
    many: &'static str,
    of_load: fn(&Load) -> usize,
    of_limits: fn(&RequestLimits) -> usize,
}

impl Counter {
    /// `1 optional parameter`, `25 optional parameters`.
    fn count(&self, n: usize) -> String {
        format!("{n} {}", if n == 1 { self.one } else { self.many })
    }
}

const COUNTERS: [Counter; 3] = [
    Counter {
        tools: true,
        one: "strict tool",
        many: "strict tools",
        of_load: |l| l.tools,
        of_limits: |l| l.tools,
    },
    Counter {
        tools: false,
        one: "optional parameter",
        many: "optional parameters",
        of_load: |l| l.optional,
        of_limits: |l| l.optional,
    },
    Counter {
        tools: false,
        one: "union-typed parameter",
        many: "union-typed parameters",
        of_load: |l| l.unions,
        of_limits: |l| l.unions,
    },
];

/// The strict tools a request holds so far, against the target's limits.
pub(crate) struct Budget {
    limits: RequestLimits,
    used: Load,
}

impl Budget {
    pub(crate) fn new(limits: RequestLimits) -> Self {
        Budget {
            limits,
            used: Load::default(),
        }
    }

    /// Adds a tool's `load` when the totals stay within every limit; otherwise leaves the totals
    /// as they were and says why, one clause per limit the tool would cross:
    /// ``its 25 optional parameters would bring the optional parameters of the request's strict
    /// tools to 25 (Anthropic strict tool use allows 24 in one request)``.
    pub(crate) fn admit(&mut self, load: Load) -> Result<(), String> {
        let total = self.used.plus(load);
        let crossed: Vec<String> = COUNTERS
            .iter()
            .filter(|c| (c.of_load)(&total) > (c.of_limits)(&self.limits))
            .map(|c| {
                let (own, sum, limit) = (
                    (c.of_load)(&load),
                    (c.of_load)(&total),
                    (c.of_limits)(&self.limits),
                );
                if c.tools {
                    format!(
                        "the request already holds {} ({} allows {limit} in one request)",
                        c.count(sum - own),
                        self.limits.who
                    )
                } else {
                    format!(
                        "its {} would bring the {} of the request's strict tools to {sum} ({} \
                         allows {limit} in one request)",
                        c.count(own),
                        c.many,
                        self.limits.who
                    )
                }
            })
            .collect();
        if crossed.is_empty() {
            self.used = total;
            Ok(())
        } else {
            Err(crossed.join("; "))
        }
    }

    /// Adds a tool's `load` whatever the totals (a tool marked `strict = true` is never
    /// demoted; `build()` refuses a dispatcher whose marked tools are over a limit together).
    pub(crate) fn force(&mut self, load: Load) {
        self.used = self.used.plus(load);
    }

    /// Why the totals are over the limits, if they are: ``together they hold 30 optional
    /// parameters (Anthropic strict tool use allows 24 in one request)``.
    pub(crate) fn over(&self) -> Option<String> {
        let parts: Vec<String> = COUNTERS
            .iter()
            .filter(|c| (c.of_load)(&self.used) > (c.of_limits)(&self.limits))
            .map(|c| {
                format!(
                    "{} ({} allows {} in one request)",
                    c.count((c.of_load)(&self.used)),
                    self.limits.who,
                    (c.of_limits)(&self.limits)
                )
            })
            .collect();
        (!parts.is_empty()).then(|| format!("together they hold {}", parts.join(" and ")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: RequestLimits = RequestLimits {
        tools: 2,
        optional: 24,
        unions: 16,
        who: "Anthropic strict tool use",
        load: |_| Load::default(),
    };

    fn load(optional: usize, unions: usize) -> Load {
        Load {
            tools: 1,
            optional,
            unions,
        }
    }

    #[test]
    fn admits_while_every_total_stays_within_its_limit() {
        let mut budget = Budget::new(LIMITS);
        assert_eq!(budget.admit(load(12, 10)), Ok(()));
        assert_eq!(
            budget.admit(load(13, 7)),
            Err(
                "its 13 optional parameters would bring the optional parameters of the \
                 request's strict tools to 25 (Anthropic strict tool use allows 24 in one \
                 request); its 7 union-typed parameters would bring the union-typed parameters of \
                 the request's strict tools to 17 (Anthropic strict tool use allows 16 in one \
                 request)"
                    .to_owned()
            )
        );
        assert_eq!(
            budget.admit(load(13, 1)),
            Err(
                "its 13 optional parameters would bring the optional parameters of the \
                 request's strict tools to 25 (Anthropic strict tool use allows 24 in one \
                 request)"
                    .to_owned()
            )
        );
        assert_eq!(
            budget.admit(load(1, 7)),
            Err(
                "its 7 union-typed parameters would bring the union-typed parameters of the \
                 request's strict tools to 17 (Anthropic strict tool use allows 16 in one \
                 request)"
                    .to_owned()
            )
        );
        // A refused tool leaves the totals as they were: exactly the rest still fits.
        assert_eq!(budget.admit(load(12, 6)), Ok(()));
        assert_eq!(
            budget.admit(load(0, 0)),
            Err(
                "the request already holds 2 strict tools (Anthropic strict tool use allows 2 \
                 in one request)"
                    .to_owned()
            )
        );
        assert_eq!(budget.over(), None);
    }

    #[test]
    fn a_forced_load_may_go_over_and_says_by_how_much() {
        let mut budget = Budget::new(LIMITS);
        budget.force(load(20, 1));
        budget.force(load(10, 1));
        budget.force(load(0, 0));
        assert_eq!(
            budget.over(),
            Some(
                "together they hold 3 strict tools (Anthropic strict tool use allows 2 in one \
                 request) and 30 optional parameters (Anthropic strict tool use allows 24 in one \
                 request)"
                    .to_owned()
            )
        );
    }
}
