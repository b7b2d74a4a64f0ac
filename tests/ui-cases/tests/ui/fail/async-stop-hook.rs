use toolgate::{stop_hook, audit::SessionSummary};

#[stop_hook]
async fn email_summary(summary: &SessionSummary) {
    let _ = summary.calls;
}

fn main() {}
