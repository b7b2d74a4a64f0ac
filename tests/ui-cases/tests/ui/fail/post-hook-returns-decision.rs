use toolgate::{CallRecord, Decision, post_hook};

#[post_hook]
fn second_guess(_record: &CallRecord<'_>) -> Decision {
    Decision::deny("too late")
}

fn main() {}
