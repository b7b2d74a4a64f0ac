use toolgate::{SessionSummary, stop_hook};

#[stop_hook]
async fn email_summary(summary: &SessionSummary) {
    let _ = summary.calls;
}

fn main() {}
