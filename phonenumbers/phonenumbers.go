// Package phonenumbers searches, buys, lists and releases the workspace's phone numbers at
// the SMS provider. Buying is a spend action, parked for confirmation on every surface: the
// builder assistant's buy_phone_number tool until the user answers `YES <code>`, and the REST
// route (admin) until POST /api/confirmations/{id} sends the code; the summary quotes the
// price in credits. The charge
// goes to the ledger with spend.recorded {category: "phone_number"}.
package phonenumbers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"time"

	"github.com/google/uuid"

	"switchboard/access"
	"switchboard/agent"
	"switchboard/apierr"
	"switchboard/money"
	"switchboard/sms"
	"switchboard/store"
)

// NanoUSDPerCredit is the nano-USD of a credit: a credit is one US cent.
const NanoUSDPerCredit = money.NanoPerUSD / 100

// Prices is the monthly price of a local number, in credits, per country that can be bought
// at once. Other countries need a regulatory bundle (identity and address documents) first.
var Prices = map[string]int{
	"US": 115,
	"CA": 130,
}

// SMSPrices is the price of one SMS segment (see sms.Segments) a campaign sends, in credits,
// by the destination's E.164 prefix; SMSPriceOther is the price to any other destination.
// A message that the provider refuses is not charged.
var SMSPrices = map[string]int{
	"+1": 1, // US and CA
}

// SMSPriceOther is the price of a segment to a destination SMSPrices does not list.
const SMSPriceOther = 8

// SMSCredits is the price in credits of sending body to the E.164 number to, and its
// segments.
func SMSCredits(to, body string) (credits, segments int) {
	per := SMSPriceOther
	for prefix, p := range SMSPrices {
		if strings.HasPrefix(to, prefix) {
			per = p
		}
	}
	segments = sms.Segments(body)
	return per * segments, segments
}

// Provider is what the service needs of the SMS provider (sms.Provider).
type Provider interface {
	Configured() bool
	Search(ctx context.Context, country string, areaCode int, contains string, limit int) ([]sms.Available, error)
	Buy(ctx context.Context, e164 string) (string, error)
	Release(ctx context.Context, sid string) error
}

// Service manages phone numbers.
type Service struct {
	store    *store.Store
	provider Provider
	log      *slog.Logger
}

// New returns the service.
func New(st *store.Store, p Provider, log *slog.Logger) *Service {
	return &Service{store: st, provider: p, log: log}
}

// Offer is a number available for purchase, with its price.
type Offer struct {
	PhoneNumber         string `json:"phone_number"`
	FriendlyName        string `json:"friendly_name"`
	Locality            string `json:"locality"`
	Region              string `json:"region"`
	Country             string `json:"country"`
	MonthlyPriceCredits int    `json:"monthly_price_credits"`
	MonthlyPriceUSD     string `json:"monthly_price_usd"`
}

// Offers is a search result.
type Offers struct {
	Object string  `json:"object"`
	Data   []Offer `json:"data"`
}

// PhoneNumber is a number of the workspace as /api answers it.
type PhoneNumber struct {
	ID                  uuid.UUID `json:"id"`
	Object              string    `json:"object"`
	PhoneNumber         string    `json:"phone_number"`
	Country             string    `json:"country"`
	Status              string    `json:"status"`
	MonthlyPriceCredits int       `json:"monthly_price_credits"`
	// PaidThrough is the end of the month already paid; the next month is charged then.
	PaidThrough time.Time `json:"paid_through"`
	// RenewalFailedAt is when the renewal first could not be paid (nil: paid up); the number
	// is released for good RenewalGrace after PaidThrough unless the workspace can pay.
	RenewalFailedAt *time.Time `json:"renewal_failed_at"`
	CreatedAt       time.Time  `json:"created_at"`
	ReleasedAt      *time.Time `json:"released_at"`
	// ReleaseReason is user (released through the API) or unpaid (renewal not paid within
	// the grace period); nil while active.
	ReleaseReason *string `json:"release_reason"`
}

// List is the workspace's numbers.
type List struct {
	Object string        `json:"object"`
	Data   []PhoneNumber `json:"data"`
}

// SearchInput is a search of available numbers.
type SearchInput struct {
	Country  string
	AreaCode string
	Contains string
	Limit    int
}

var (
	areaCode = regexp.MustCompile(`^[0-9]{3}$`)
	contains = regexp.MustCompile(`^[0-9*]{1,10}$`)
	e164     = regexp.MustCompile(`^\+[1-9][0-9]{6,14}$`)
)

// price is the monthly price of a number of country, or the error saying it cannot be
// bought at once.
func price(param, country string) (string, int, error) {
	c := strings.ToUpper(strings.TrimSpace(country))
	if len(c) != 2 || c[0] < 'A' || c[0] > 'Z' || c[1] < 'A' || c[1] > 'Z' {
		return c, 0, apierr.Invalid(param, "invalid_value", "%s must be an ISO 3166 two-letter country code such as US.", param)
	}
	p, ok := Prices[c]
	if !ok {
		return c, 0, apierr.Unprocessable(param, "regulatory_bundle_required",
			"Numbers in %s need a regulatory bundle (identity and address documents approved by the provider) before purchase; only US and CA numbers can be bought at once.", c)
	}
	return c, p, nil
}

// Search lists numbers the provider offers, with their price.
func (s *Service) Search(ctx context.Context, in SearchInput) (Offers, error) {
	country, credits, err := price("country", in.Country)
	if err != nil {
		return Offers{}, err
	}
	area := 0
	if in.AreaCode != "" {
		if !areaCode.MatchString(in.AreaCode) {
			return Offers{}, apierr.Invalid("area_code", "invalid_value", "area_code must be three digits, such as 415.")
		}
		_, _ = fmt.Sscan(in.AreaCode, &area)
	}
	if in.Contains != "" && !contains.MatchString(in.Contains) {
		return Offers{}, apierr.Invalid("contains", "invalid_value", "contains must be 1 to 10 digits (or * wildcards).")
	}
	limit := in.Limit
	if limit == 0 {
		limit = 20
	}
	if limit < 1 || limit > 50 {
		return Offers{}, apierr.Invalid("limit", "invalid_value", "limit must be 1 to 50.")
	}
	found, err := s.provider.Search(ctx, country, area, in.Contains, limit)
	if err != nil {
		return Offers{}, err
	}
	out := Offers{Object: "list", Data: make([]Offer, 0, len(found))}
	for _, f := range found {
		out.Data = append(out.Data, Offer{PhoneNumber: f.PhoneNumber, FriendlyName: f.FriendlyName, Locality: f.Locality, Region: f.Region,
			Country: country, MonthlyPriceCredits: credits, MonthlyPriceUSD: money.FormatUSD(int64(credits) * NanoUSDPerCredit)})
	}
	return out, nil
}

// BuyInput is a purchase. ConfirmPrice must equal the quoted monthly price in credits.
type BuyInput struct {
	PhoneNumber  string `json:"phone_number" jsonschema:"the number to buy, in E.164, as a search listed it"`
	Country      string `json:"country" jsonschema:"ISO 3166 two-letter country code of the number: US or CA"`
	ConfirmPrice *int   `json:"confirm_price,omitempty" jsonschema:"the quoted monthly price in credits"`
}

// Quote checks a purchase and returns the country and its monthly price in credits.
func (s *Service) Quote(in BuyInput) (string, int, error) {
	if !e164.MatchString(strings.TrimSpace(in.PhoneNumber)) {
		return "", 0, apierr.Invalid("phone_number", "invalid_phone", "phone_number must be in E.164, such as +14155550100.")
	}
	country, credits, err := price("country", in.Country)
	if err != nil {
		return "", 0, err
	}
	if (country == "US" || country == "CA") && !strings.HasPrefix(strings.TrimSpace(in.PhoneNumber), "+1") {
		return "", 0, apierr.Invalid("phone_number", "invalid_phone", "A %s number starts with +1.", country)
	}
	return country, credits, nil
}

// CheckPurchase checks a purchase before it is parked for confirmation, so nothing is parked
// that could not run: the number and country, confirm_price when given (it must be the
// quote), a configured provider and a balance and spend cap that cover the first month. Buy
// checks them all again when the confirmed purchase runs.
func (s *Service) CheckPurchase(ctx context.Context, ws uuid.UUID, in BuyInput) error {
	country, credits, err := s.Quote(in)
	if err != nil {
		return err
	}
	if in.ConfirmPrice != nil && *in.ConfirmPrice != credits {
		return &apierr.Error{Kind: apierr.KindConflict, Param: "confirm_price", Code: "price_mismatch",
			Message: fmt.Sprintf("The price of a %s number is %d credits a month, not %d.", country, credits, *in.ConfirmPrice)}
	}
	if !s.provider.Configured() {
		return sms.ErrNotConfigured()
	}
	return s.affordable(ctx, ws, int64(credits)*NanoUSDPerCredit)
}

// affordable refuses a charge the workspace's balance or monthly spend cap does not cover.
func (s *Service) affordable(ctx context.Context, ws uuid.UUID, cost int64) error {
	w, err := s.store.WorkspaceByID(ctx, ws)
	if err != nil {
		return err
	}
	if w.BalanceNanoUSD < cost {
		return apierr.Quota("The workspace's balance ($%s) does not cover this number ($%s).", money.FormatUSD(w.BalanceNanoUSD), money.FormatUSD(cost))
	}
	if w.MonthlyCapNanoUSD != nil && w.MonthSpendNanoUSD+cost > *w.MonthlyCapNanoUSD {
		e := apierr.Quota("This number ($%s) would take the workspace past its monthly spend cap of $%s ($%s spent this month).",
			money.FormatUSD(cost), money.FormatUSD(*w.MonthlyCapNanoUSD), money.FormatUSD(w.MonthSpendNanoUSD))
		e.Hint = "An admin can raise or clear the cap on the dashboard's Settings page."
		return e
	}
	return nil
}

// Buy purchases a number: the price must be confirmed, the workspace must afford it; the
// provider buys it, then the number, the ledger charge and spend.recorded are written in one
// transaction (if that fails, the number is released at the provider again).
func (s *Service) Buy(ctx context.Context, ws uuid.UUID, in BuyInput) (PhoneNumber, error) {
	country, credits, err := s.Quote(in)
	if err != nil {
		return PhoneNumber{}, err
	}
	if in.ConfirmPrice == nil {
		return PhoneNumber{}, apierr.Invalid("confirm_price", "missing_parameter",
			"Confirm the price: set confirm_price to %d (credits a month, $%s).", credits, money.FormatUSD(int64(credits)*NanoUSDPerCredit))
	}
	if *in.ConfirmPrice != credits {
		return PhoneNumber{}, &apierr.Error{Kind: apierr.KindConflict, Param: "confirm_price", Code: "price_mismatch",
			Message: fmt.Sprintf("The price of a %s number is %d credits a month, not %d; confirm %d to buy it.", country, credits, *in.ConfirmPrice, credits)}
	}
	if !s.provider.Configured() {
		return PhoneNumber{}, sms.ErrNotConfigured()
	}
	cost := int64(credits) * NanoUSDPerCredit
	if err := s.affordable(ctx, ws, cost); err != nil {
		return PhoneNumber{}, err
	}
	number := strings.TrimSpace(in.PhoneNumber)
	sid, err := s.provider.Buy(ctx, number)
	if err != nil {
		return PhoneNumber{}, err
	}
	var row store.PhoneNumber
	err = s.store.InTx(ctx, func(tx *store.Tx) error {
		row, err = tx.InsertPhoneNumber(ctx, store.NewPhoneNumber{WorkspaceID: ws, E164: number, Country: country, ProviderSid: sid, MonthlyPriceCredits: credits})
		if err != nil {
			return err
		}
		_, _, err = tx.Settle(ctx, ws, &store.Charge{AmountNanoUSD: cost, Category: "phone_number"}, func(balance int64) []store.NewEvent {
			return []store.NewEvent{{Type: "spend.recorded", Data: map[string]any{"amount_usd": json.Number(money.FormatUSD(cost)), "category": "phone_number",
				"balance_usd": json.Number(money.FormatUSD(balance)), "phone_number": number, "phone_number_id": row.ID.String(), "credits": credits}}}
		})
		return err
	})
	if err != nil {
		if rerr := s.provider.Release(context.WithoutCancel(ctx), sid); rerr != nil {
			s.log.ErrorContext(ctx, "releasing a number whose purchase could not be recorded", slog.String("sid", sid), slog.String("error", rerr.Error()))
		}
		if errors.Is(err, store.ErrExists) {
			return PhoneNumber{}, apierr.Conflict("phone_number_taken", "That number is already in use.")
		}
		return PhoneNumber{}, err
	}
	return view(row), nil
}

// List lists the workspace's numbers, newest first (status: active or released; empty: all).
func (s *Service) List(ctx context.Context, ws uuid.UUID, status string) (List, error) {
	var st *string
	if status != "" {
		st = &status
	}
	rows, err := s.store.ListPhoneNumbers(ctx, ws, st)
	if err != nil {
		return List{}, err
	}
	out := List{Object: "list", Data: make([]PhoneNumber, 0, len(rows))}
	for _, r := range rows {
		out.Data = append(out.Data, view(r))
	}
	return out, nil
}

// Release gives a number back to the provider; it stays listed as released. The month
// already paid is not refunded.
func (s *Service) Release(ctx context.Context, ws, id uuid.UUID) (PhoneNumber, error) {
	n, err := s.store.PhoneNumberByID(ctx, ws, id)
	if err != nil {
		return PhoneNumber{}, apierr.WithParam(err, "id")
	}
	if n.Status != "active" {
		return PhoneNumber{}, apierr.Conflict("phone_number_released", "This number was already released.")
	}
	if err := s.provider.Release(ctx, n.ProviderSid); err != nil {
		return PhoneNumber{}, err
	}
	r, err := s.store.ReleasePhoneNumber(ctx, ws, id)
	if err != nil {
		return PhoneNumber{}, err
	}
	return view(r), nil
}

func view(r store.PhoneNumber) PhoneNumber {
	return PhoneNumber{ID: r.ID, Object: "phone_number", PhoneNumber: r.E164, Country: r.Country, Status: r.Status,
		MonthlyPriceCredits: r.MonthlyPriceCredits, PaidThrough: r.PaidThrough, RenewalFailedAt: r.RenewalFailedAt, CreatedAt: r.CreatedAt,
		ReleasedAt: r.ReleasedAt, ReleaseReason: r.ReleaseReason}
}

// toolInput is the builder assistant's buy_phone_number arguments: the price is confirmed
// by the user's `YES <code>`, not by the model.
type toolInput struct {
	PhoneNumber string `json:"phone_number"`
	Country     string `json:"country"`
}

var toolSchema = json.RawMessage(`{"type":"object","additionalProperties":false,"required":["phone_number","country"],"properties":{` +
	`"phone_number":{"type":"string","description":"The number to buy, in E.164 (such as +14155550100)."},` +
	`"country":{"type":"string","description":"ISO 3166 two-letter country code of the number: US or CA (others need a regulatory bundle)."}}}`)

func decodeTool(raw json.RawMessage) (toolInput, error) {
	var in toolInput
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return in, apierr.Invalid("", "invalid_arguments", "The arguments do not fit buy_phone_number: %v", err)
	}
	return in, nil
}

// AgentTools are the builder assistant's tools of this package: buy_phone_number, a spend
// tool that parks until the user confirms the quoted price with `YES <code>`.
func (s *Service) AgentTools() []agent.Tool {
	return []agent.Tool{{
		Name:        "buy_phone_number",
		Description: "Buy a phone number for the workspace (US or CA, as listed by a search). Costs credits every month; the user confirms the price first.",
		Parameters:  toolSchema,
		Class:       agent.Spend,
		Permission:  access.PhoneNumbers,
		Describe: func(_ context.Context, c agent.Call) (string, error) {
			in, err := decodeTool(c.Arguments)
			if err != nil {
				return "", err
			}
			country, credits, err := s.Quote(BuyInput{PhoneNumber: in.PhoneNumber, Country: in.Country})
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("Buy the %s phone number %s for %d credits ($%s) a month, charged now.", country, strings.TrimSpace(in.PhoneNumber),
				credits, money.FormatUSD(int64(credits)*NanoUSDPerCredit)), nil
		},
		Run: func(ctx context.Context, c agent.Call) (any, error) {
			in, err := decodeTool(c.Arguments)
			if err != nil {
				return nil, err
			}
			_, credits, err := s.Quote(BuyInput{PhoneNumber: in.PhoneNumber, Country: in.Country})
			if err != nil {
				return nil, err
			}
			// The user confirmed the price the summary quoted, which is the table's.
			return s.Buy(ctx, c.WorkspaceID, BuyInput{PhoneNumber: in.PhoneNumber, Country: in.Country, ConfirmPrice: &credits})
		},
	}}
}
