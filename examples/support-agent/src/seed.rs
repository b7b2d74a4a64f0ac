//! The shop's seed data: the customers, orders and FAQ entries the bundled transcripts rely on.
//!
//! Read-only and in memory; a real host would read them from its database. Amounts are in
//! cents (US dollars).

/// A customer account.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Customer {
    /// `u_001`.
    pub user_id: &'static str,
    /// `"free"` or `"premium"`.
    pub tier: &'static str,
}

/// An order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Order {
    /// `o_1001`.
    pub order_id: &'static str,
    /// The customer who placed it.
    pub owner: &'static str,
    /// What the customer paid, in cents.
    pub amount_cents: u64,
}

/// One entry of the help centre.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FaqEntry {
    /// The question as customers ask it.
    pub question: &'static str,
    /// The shop's answer.
    pub answer: &'static str,
}

/// Every customer.
pub const CUSTOMERS: &[Customer] = &[
    Customer {
        user_id: "u_001",
        tier: "premium",
    },
    Customer {
        user_id: "u_004",
        tier: "free",
    },
    Customer {
        user_id: "u_007",
        tier: "premium",
    },
    Customer {
        user_id: "u_999",
        tier: "premium",
    },
];

/// Every order.
pub const ORDERS: &[Order] = &[
    Order {
        order_id: "o_1001",
        owner: "u_001",
        amount_cents: 2599,
    },
    Order {
        order_id: "o_1002",
        owner: "u_001",
        amount_cents: 45000,
    },
    Order {
        order_id: "o_2001",
        owner: "u_004",
        amount_cents: 1299,
    },
    Order {
        order_id: "o_3001",
        owner: "u_007",
        amount_cents: 52000,
    },
    Order {
        order_id: "o_3002",
        owner: "u_007",
        amount_cents: 30000,
    },
];

/// The help centre, in the order it is shown when entries score the same.
pub const FAQ: &[FaqEntry] = &[
    FaqEntry {
        question: "How long do I have to ask for a refund?",
        answer: "Refunds can be requested within 30 days of delivery; electronics within 14 days, \
                 unopened or with a fault reported in that window.",
    },
    FaqEntry {
        question: "My order arrived damaged. What do I do?",
        answer: "Send photos of the item and the box; premium customers get a case file and a \
                 refund or replacement, usually within 2 business days.",
    },
    FaqEntry {
        question: "Can shipping fees be credited back to my account?",
        answer: "Shipping fees are credited as account credit when an order arrives late or \
                 damaged; other shipping fees are not refundable.",
    },
    FaqEntry {
        question: "What does premium include?",
        answer: "Premium customers get case files, refunds handled by the support team, and free \
                 shipping on every order.",
    },
    FaqEntry {
        question: "My order never arrived.",
        answer: "If tracking shows no delivery 5 days after the estimate, contact support with \
                 the tracking page; we open a case and reship or refund.",
    },
    FaqEntry {
        question: "How do I change my delivery address?",
        answer: "Addresses can be changed until the order ships, from the order page.",
    },
];

/// The customer with this id.
pub fn customer(user_id: &str) -> Option<&'static Customer> {
    CUSTOMERS.iter().find(|c| c.user_id == user_id)
}

/// The order with this id.
pub fn order(order_id: &str) -> Option<&'static Order> {
    ORDERS.iter().find(|o| o.order_id == order_id)
}

/// The orders a customer placed, in seed order.
pub fn orders_of(user_id: &str) -> impl Iterator<Item = &'static Order> + '_ {
    ORDERS.iter().filter(move |o| o.owner == user_id)
}

/// The FAQ entries that share at least one word of 4 letters or more (case-insensitive) with
/// `query`, best first: more shared words first, then seed order. (Shorter words are mostly
/// "the", "for", "and": they would match everything.)
pub fn search_faq(query: &str) -> Vec<&'static FaqEntry> {
    let mut wanted: Vec<String> = words(query).filter(|w| w.chars().count() >= 4).collect();
    wanted.sort();
    wanted.dedup();
    let mut scored: Vec<(usize, usize, &'static FaqEntry)> = FAQ
        .iter()
        .enumerate()
        .filter_map(|(i, entry)| {
            let text: Vec<String> = words(entry.question).chain(words(entry.answer)).collect();
            let score = wanted.iter().filter(|w| text.contains(w)).count();
            (score > 0).then_some((score, i, entry))
        })
        .collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    scored.into_iter().map(|(_, _, e)| e).collect()
}

/// Lower-case words of `text` (runs of letters and digits).
fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
}
