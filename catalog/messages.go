package catalog

// Message prices of the messaging apps (msgapp_1 … msgapp_4): what one message costs the
// workspace, in nano-USD, whichever way it goes; a reply an app takes in several parts
// (its length limit) costs one message per part. The apps' own fees differ (WhatsApp bills
// conversations and templates, the others nothing), so these are the platform's flat prices
// for carrying a message, the way SMS is priced per segment.
var messagePrices = map[string]int64{
	"msgapp_1": 5_000_000, // WhatsApp: $0.005
	"msgapp_2": 2_000_000, // Messenger: $0.002
	"msgapp_3": 2_000_000, // Instagram: $0.002
	"msgapp_4": 1_000_000, // Telegram: $0.001
}

// MessagePriceNanoUSD is the price of one message on a messaging app (a channel type such as
// "msgapp_1"); 0 for a channel type without one.
func MessagePriceNanoUSD(app string) int64 { return messagePrices[app] }
