use toolgate::{Decision, post_hook, audit::CallRecord};

#[post_hook]
fn second_guess(_record: &CallRecord<'_>) -> Decision {
    Decision::deny("too late")
}

fn main() {}
