//! The six tools of `tests/fixtures/anthropic/tools/official_tools.json` (Anthropic's tool-use
//! docs and the customer-service cookbook), written as `#[tool]` functions with made-up data
//! that reproduces the fixtures' illustrative results.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolgate::{ToolError, tool};

/// This module's path, for `registered_under`.
pub(crate) const MODULE: &str = module_path!();

/// A temperature unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Unit {
    Celsius,
    Fahrenheit,
}

/// Get the current weather in a given location
#[tool]
pub(crate) fn get_weather(
    /// The city and state, e.g. San Francisco, CA
    location: String,
    /// The unit of temperature, either 'celsius' or 'fahrenheit'
    unit: Option<Unit>,
) -> Result<String, ToolError> {
    let (f, sky) = match location.as_str() {
        "Chicago, IL" => (41, "light rain"),
        "Denver, CO" => (54, "clear skies"),
        "San Francisco, CA" => (59, "fog"),
        _ => {
            return Err(ToolError::new(format!(
                "No weather station for '{location}'."
            )));
        }
    };
    let city = location.split(',').next().unwrap_or_default();
    Ok(match unit.unwrap_or(Unit::Fahrenheit) {
        Unit::Fahrenheit => format!("{city}: {f}°F, {sky}"),
        Unit::Celsius => format!("{city}: {}°C, {sky}", (f - 32) * 5 / 9),
    })
}

/// Get the current time in a given timezone
#[tool]
pub(crate) fn get_time(
    /// The timezone, e.g. America/New_York
    timezone: String,
) -> String {
    match timezone.as_str() {
        "America/Chicago" => "Chicago time: 9:15 AM CST".to_owned(),
        other => format!("{other} time: 10:15 AM"),
    }
}

/// A stock quote.
#[derive(Serialize)]
pub(crate) struct Quote {
    ticker: String,
    price_usd: f64,
}

/// Retrieves the current stock price for a given ticker symbol. The ticker symbol must be a valid
/// symbol for a publicly traded company on a major US stock exchange like NYSE or NASDAQ. The
/// tool will return the latest trade price in USD. It should be used when the user asks about
/// the current or most recent price of a specific stock. It will not provide any other
/// information about the stock or company.
#[tool]
pub(crate) fn get_stock_price(
    /// The stock ticker symbol, e.g. AAPL for Apple Inc.
    ticker: String,
) -> Result<Quote, ToolError> {
    let price_usd = match ticker.as_str() {
        "MSFT" => 421.37,
        "AAPL" => 229.1,
        _ => return Err(ToolError::new(format!("Unknown ticker '{ticker}'."))),
    };
    Ok(Quote { ticker, price_usd })
}

/// The input of `get_customer_info`, in the struct form.
#[derive(Deserialize, JsonSchema)]
pub(crate) struct CustomerQuery {
    /// The unique identifier for the customer.
    pub(crate) customer_id: String,
}

/// Retrieves customer information based on their customer ID. Returns the customer's name,
/// email, and phone number.
#[tool]
pub(crate) fn get_customer_info(#[input] query: CustomerQuery) -> Result<String, ToolError> {
    match query.customer_id.as_str() {
        "C1" => Ok("John Doe, john@example.com, 123-456-7890".to_owned()),
        other => Err(ToolError::new(format!("Customer '{other}' not found."))),
    }
}

/// An order, as the cookbook returns it.
#[derive(Serialize)]
pub(crate) struct Order {
    id: String,
    product: String,
    quantity: u32,
    price: f64,
    status: String,
}

/// Retrieves the details of a specific order based on the order ID. Returns the order ID,
/// product name, quantity, price, and order status.
#[tool]
pub(crate) fn get_order_details(
    /// The unique identifier for the order.
    order_id: String,
) -> Result<Order, ToolError> {
    if order_id != "O7731" {
        return Err(ToolError::new(format!("Order '{order_id}' not found.")));
    }
    Ok(Order {
        id: order_id,
        product: "Widget C".into(),
        quantity: 3,
        price: 12.5,
        status: "Shipped".into(),
    })
}

/// Cancels an order based on the provided order ID. Returns a confirmation message if the
/// cancellation is successful.
#[tool]
pub(crate) fn cancel_order(
    /// The unique identifier for the order to be cancelled.
    order_id: String,
) -> String {
    format!("Order {order_id} cancelled.")
}
