package bulk

import (
	"context"
	"encoding/json"

	"github.com/google/uuid"

	"switchboard/campaigns"
	"switchboard/manage"
	"switchboard/store"
)

// ContactsInput is delete_contacts' input.
type ContactsInput struct {
	Filter *ContactFilter `json:"filter,omitempty" jsonschema:"description=Which contacts: every key given must match. Give filter or ids."`
	Selection
}

// ContactFilter are delete_contacts' filter keys.
type ContactFilter struct {
	Tag    string `json:"tag,omitempty" jsonschema:"maxLength=100,description=Contacts carrying this tag."`
	ListID string `json:"list_id,omitempty" jsonschema:"format=uuid,description=Contacts on this contact list."`
	All    bool   `json:"all,omitempty" jsonschema:"description=Every contact of the workspace; needs confirm_count. Not combined with other keys."`
}

// DeleteCampaignsInput is delete_campaigns' input.
type DeleteCampaignsInput struct {
	Filter *DeleteCampaignFilter `json:"filter,omitempty" jsonschema:"description=Which campaigns: every key given must match. Give filter or ids."`
	// IncludeRunning deletes running campaigns too; without it they are skipped (and listed in
	// skipped). Also accepted inside filter.
	IncludeRunning bool `json:"include_running,omitempty" jsonschema:"description=Delete running campaigns too (they stop sending). Without it running campaigns are left alone and listed in skipped."`
	Selection
}

// DeleteCampaignFilter are delete_campaigns' filter keys.
type DeleteCampaignFilter struct {
	Status         campaigns.Status `json:"status,omitempty"`
	All            bool             `json:"all,omitempty" jsonschema:"description=Every campaign of the workspace (running ones only with include_running); needs confirm_count. Not combined with status."`
	IncludeRunning bool             `json:"include_running,omitempty" jsonschema:"description=Same as the top-level include_running."`
}

// CancelCampaignsInput is cancel_campaigns' input.
type CancelCampaignsInput struct {
	Filter *CancelCampaignFilter `json:"filter,omitempty" jsonschema:"description=Which in-flight campaigns (scheduled, running or paused): every key given must match. Give filter or ids."`
	Selection
}

// CancelCampaignFilter are cancel_campaigns' filter keys.
type CancelCampaignFilter struct {
	Status InFlightStatus `json:"status,omitempty"`
	All    bool           `json:"all,omitempty" jsonschema:"description=Every in-flight campaign; needs confirm_count. Not combined with status."`
}

// skippedLimit bounds the items skipped names one by one.
const skippedLimit = 100

// moreKinds are the bulk tools of contacts and campaigns.
func moreKinds() []kind { return []kind{contactsKind(), deleteCampaignsKind(), cancelCampaignsKind()} }

func contactsKind() kind {
	return kind{tool: "delete_contacts", verb: "Delete", nouns: "contacts", destructive: true,
		description: "Soft-delete contacts, by filter (tag, list_id, or all) or ids: they are hidden and never messaged by campaigns, and can be restored (POST /api/contacts/{id}/restore). Parks one confirmation stating the count and a sample.",
		schema:      manage.InputSchema[ContactsInput](),
		decode: func(raw json.RawMessage) (input, error) {
			v, err := manage.DecodeInput[ContactsInput]("delete_contacts", raw)
			if err != nil {
				return input{}, err
			}
			in, err := selection(v.Selection, v.Filter != nil, "")
			if err != nil || v.Filter == nil {
				return in, err
			}
			f := v.Filter
			k := keys{all: f.All}
			k.add("tag", f.Tag)
			k.add("list", f.ListID)
			if err := k.check(&in); err != nil {
				return in, err
			}
			in.set.Tag = f.Tag
			in.set.ListID, err = optionalUUID("filter.list_id", f.ListID)
			return in, err
		},
		count: func(ctx context.Context, st *store.Store, ws uuid.UUID, set store.BulkSet) (int, error) {
			return st.CountContacts(ctx, ws, set)
		},
		sample: func(ctx context.Context, st *store.Store, ws uuid.UUID, set store.BulkSet) ([]store.BulkItem, error) {
			return st.SampleContacts(ctx, ws, set)
		},
		apply: func(ctx context.Context, tx *store.Tx, ws uuid.UUID, set store.BulkSet, limit int) (int, error) {
			return tx.SoftDeleteContacts(ctx, ws, set, limit)
		},
	}
}

func sampleCampaigns(ctx context.Context, st *store.Store, ws uuid.UUID, set store.BulkSet) ([]store.BulkItem, error) {
	return st.SampleCampaigns(ctx, ws, set, 5)
}

func countCampaigns(ctx context.Context, st *store.Store, ws uuid.UUID, set store.BulkSet) (int, error) {
	return st.CountCampaigns(ctx, ws, set)
}

// skippedCampaigns lists the campaigns of the call's filter or ids in the given statuses,
// which the tool leaves alone, with why.
func skippedCampaigns(statuses []string, reason string) func(context.Context, *store.Store, uuid.UUID, input) ([]Skip, error) {
	return func(ctx context.Context, st *store.Store, ws uuid.UUID, in input) ([]Skip, error) {
		if in.includeRunning || (reason == "not_in_flight" && !in.set.ByIDs) {
			return nil, nil
		}
		probe := in.set
		probe.Statuses = statuses
		items, err := st.SampleCampaigns(ctx, ws, probe, skippedLimit)
		out := make([]Skip, len(items))
		for i, it := range items {
			out[i] = Skip{ID: it.ID, Name: it.Name, Reason: reason}
		}
		return out, err
	}
}

func deleteCampaignsKind() kind {
	return kind{tool: "delete_campaigns", verb: "Delete", nouns: "campaigns", destructive: true,
		description: "Delete campaigns and their send records, by filter (status, or all) or ids. Running campaigns are skipped (listed in skipped with reason running) unless include_running is true. Parks one confirmation stating the count and a sample.",
		schema:      manage.InputSchema[DeleteCampaignsInput](),
		decode: func(raw json.RawMessage) (input, error) {
			v, err := manage.DecodeInput[DeleteCampaignsInput]("delete_campaigns", raw)
			if err != nil {
				return input{}, err
			}
			in, err := selection(v.Selection, v.Filter != nil, "")
			if err != nil {
				return in, err
			}
			in.includeRunning = v.IncludeRunning || (v.Filter != nil && v.Filter.IncludeRunning)
			in.set.Statuses = notRunning
			if in.includeRunning {
				in.set.Statuses = campaigns.Statuses()
			}
			if v.Filter == nil {
				return in, nil
			}
			k := keys{all: v.Filter.All}
			k.add("status", string(v.Filter.Status))
			if err := k.check(&in); err != nil {
				return in, err
			}
			in.set.Status = string(v.Filter.Status)
			return in, nil
		},
		count:   countCampaigns,
		sample:  sampleCampaigns,
		skipped: skippedCampaigns([]string{campaigns.Running}, "running"),
		apply: func(ctx context.Context, tx *store.Tx, ws uuid.UUID, set store.BulkSet, limit int) (int, error) {
			return tx.DeleteCampaigns(ctx, ws, set, limit)
		},
	}
}

func cancelCampaignsKind() kind {
	return kind{tool: "cancel_campaigns", verb: "Cancel", nouns: "campaigns",
		description: "Cancel in-flight campaigns (scheduled, running or paused): they stop sending, for good. By filter (status, or all with confirm_count) or ids; ids of campaigns not in flight are listed in skipped (reason not_in_flight). Safe: runs at once, no confirmation.",
		schema:      manage.InputSchema[CancelCampaignsInput](),
		decode: func(raw json.RawMessage) (input, error) {
			v, err := manage.DecodeInput[CancelCampaignsInput]("cancel_campaigns", raw)
			if err != nil {
				return input{}, err
			}
			in, err := selection(v.Selection, v.Filter != nil, "")
			if err != nil {
				return in, err
			}
			in.set.Statuses = inFlight
			if v.Filter == nil {
				return in, nil
			}
			k := keys{all: v.Filter.All}
			k.add("status", string(v.Filter.Status))
			if err := k.check(&in); err != nil {
				return in, err
			}
			in.set.Status = string(v.Filter.Status)
			return in, nil
		},
		count:   countCampaigns,
		sample:  sampleCampaigns,
		skipped: skippedCampaigns(settled, "not_in_flight"),
		apply: func(ctx context.Context, tx *store.Tx, ws uuid.UUID, set store.BulkSet, limit int) (int, error) {
			return tx.CancelCampaigns(ctx, ws, set, limit)
		},
	}
}
