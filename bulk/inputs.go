package bulk

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"switchboard/apierr"
	"switchboard/blueprint"
	"switchboard/manage"
	"switchboard/store"
)

// Selection are the keys every bulk tool takes beside its filter.
type Selection struct {
	IDs          []string `json:"ids,omitempty" jsonschema:"minItems=1,maxItems=1000,description=Explicit ids to act on instead of a filter (at most 1000). Ids that match nothing are reported in skipped (reason not_found)."`
	ConfirmCount *int     `json:"confirm_count,omitempty" jsonschema:"minimum=0,description=The number of items you expect to match. Required with filter {all: true}; when given it must equal the current count or nothing is done."`
	// Parked is written by the platform when the call is parked (the count it matched); a
	// caller's value is replaced.
	Parked *Parked `json:"parked,omitempty" jsonschema:"-"`
}

// ConversationsInput is delete_conversations' input.
type ConversationsInput struct {
	Filter *ConversationFilter `json:"filter,omitempty" jsonschema:"description=Which conversations: every key given must match. Give filter or ids."`
	Selection
}

// ConversationFilter are delete_conversations' filter keys.
type ConversationFilter struct {
	Status    ConversationStatus `json:"status,omitempty"`
	Channel   string             `json:"channel,omitempty" jsonschema:"maxLength=50,description=The conversation's channel: api (builder assistant and /v1 turns) or a channel type such as webchat or sms."`
	ContactID string             `json:"contact_id,omitempty" jsonschema:"format=uuid"`
	Source    ConversationSource `json:"source,omitempty" jsonschema:"description=assistant: conversations with the builder assistant (/v1 and /api/chat); agent: conversations of a deployed agent."`
	OlderThan string             `json:"older_than,omitempty" jsonschema:"maxLength=40,description=Only conversations created before this: an age such as 30d or 12h or 2w or 90m, or an RFC 3339 date-time or a date (YYYY-MM-DD)."`
	All       bool               `json:"all,omitempty" jsonschema:"description=Every conversation of the workspace; needs confirm_count. Not combined with other keys."`
}

// ChannelsInput is delete_channels' input.
type ChannelsInput struct {
	Filter *ChannelFilter `json:"filter,omitempty" jsonschema:"description=Which channels: every key given must match. Give filter or ids."`
	Selection
}

// ChannelFilter are delete_channels' filter keys. A channel's status is `deployed` while an
// agent is deployed on it, else `unused`.
type ChannelFilter struct {
	Provider blueprint.ChannelType `json:"provider,omitempty"`
	Status   ChannelStatus         `json:"status,omitempty" jsonschema:"description=deployed: an agent is deployed on the channel; unused: none is."`
	All      bool                  `json:"all,omitempty" jsonschema:"description=Every channel of the workspace; needs confirm_count. Not combined with other keys."`
}

// UndeployInput is undeploy_agents' input; its ids are deployment ids (deploy_agent's
// deploymentId).
type UndeployInput struct {
	Filter *UndeployFilter `json:"filter,omitempty" jsonschema:"description=Which deployments: every key given must match. Give filter or ids (deployment ids)."`
	Selection
}

// UndeployFilter are undeploy_agents' filter keys.
type UndeployFilter struct {
	AgentID   string `json:"agent_id,omitempty" jsonschema:"format=uuid"`
	ChannelID string `json:"channel_id,omitempty" jsonschema:"format=uuid"`
	All       bool   `json:"all,omitempty" jsonschema:"description=Every deployment of the workspace; needs confirm_count. Not combined with other keys."`
}

// decode reads a kind's arguments strictly (unknown keys refused) into an input.
func decode(k kind, raw json.RawMessage) (input, error) {
	if len(bytes.TrimSpace(raw)) == 0 || string(raw) == "null" {
		raw = json.RawMessage("{}")
	}
	in, err := k.decode(raw)
	if err != nil {
		return input{}, err
	}
	in.raw = raw
	return in, nil
}

// selection checks the choice between filter and ids, and reads the ids: UUIDs, or for
// conversations also `mc-` ids (refs).
func selection(sel Selection, hasFilter bool, refPrefix string) (input, error) {
	var in input
	in.confirmCount, in.parked = sel.ConfirmCount, sel.Parked
	switch {
	case hasFilter && sel.IDs != nil:
		return in, apierr.Invalid("ids", "filter_and_ids", "Give either filter or ids, not both.")
	case !hasFilter && sel.IDs == nil:
		return in, apierr.Invalid("filter", "filter_required", "Give a filter (use {all: true} for everything, with confirm_count) or an ids list.")
	case sel.IDs != nil && len(sel.IDs) == 0:
		return in, apierr.Invalid("ids", "ids_empty", "ids must list at least one id.")
	case len(sel.IDs) > MaxIDs:
		return in, apierr.Invalid("ids", "too_many_ids", "ids may list at most %d ids; %d were given. Use a filter, or several calls.", MaxIDs, len(sel.IDs))
	}
	if sel.IDs == nil {
		return in, nil
	}
	seen := map[string]bool{}
	in.set.ByIDs = true
	for i, raw := range sel.IDs {
		id := strings.TrimSpace(raw)
		if seen[id] {
			continue
		}
		seen[id] = true
		if u, err := uuid.Parse(id); err == nil {
			in.set.IDs = append(in.set.IDs, u)
			continue
		}
		if refPrefix != "" && strings.HasPrefix(id, refPrefix) {
			in.set.Refs = append(in.set.Refs, id)
			continue
		}
		want := "a UUID"
		if refPrefix != "" {
			want = "a UUID or a " + refPrefix + " id"
		}
		return in, apierr.Invalid(fmt.Sprintf("ids[%d]", i), "invalid_id", "ids[%d] must be %s, not %q.", i, want, raw)
	}
	in.requested = len(seen)
	in.describe = fmt.Sprintf("%d listed id(s)", in.requested)
	return in, nil
}

// keys is a filter's keys in words; all must stand alone, and a filter needs one key.
type keys struct {
	words []string
	all   bool
}

func (k *keys) add(name, value string) {
	if value != "" {
		k.words = append(k.words, name+" "+value)
	}
}

func (k *keys) check(in *input) error {
	switch {
	case k.all && len(k.words) > 0:
		return apierr.Invalid("filter.all", "all_with_keys", "filter {all: true} means every item; do not combine it with other keys (%s).", strings.Join(k.words, ", "))
	case k.all:
		in.all, in.describe = true, "all of them"
	case len(k.words) == 0:
		return apierr.Invalid("filter", "filter_empty", "The filter names no key; give at least one key, or {all: true} with confirm_count.")
	default:
		in.describe = strings.Join(k.words, ", ")
	}
	return nil
}

func optionalUUID(param, value string) (*uuid.UUID, error) {
	if value == "" {
		return nil, nil
	}
	id, err := uuid.Parse(value)
	if err != nil {
		return nil, apierr.Invalid(param, "invalid_id", "%s must be a UUID, not %q.", param, value)
	}
	return &id, nil
}

var ageRE = regexp.MustCompile(`^([0-9]{1,6})(m|h|d|w)$`)

// olderThan reads older_than: an age (30d, 12h, 2w, 90m) before now, or a date-time or date.
func olderThan(value string, now time.Time) (*time.Time, error) {
	if value == "" {
		return nil, nil
	}
	if m := ageRE.FindStringSubmatch(strings.TrimSpace(value)); m != nil {
		n, _ := strconv.Atoi(m[1])
		unit := map[string]time.Duration{"m": time.Minute, "h": time.Hour, "d": 24 * time.Hour, "w": 7 * 24 * time.Hour}[m[2]]
		t := now.Add(-time.Duration(n) * unit)
		return &t, nil
	}
	for _, layout := range []string{time.RFC3339, "2006-01-02"} {
		if t, err := time.Parse(layout, value); err == nil {
			return &t, nil
		}
	}
	return nil, apierr.Invalid("filter.older_than", "invalid_older_than", "older_than must be an age such as 30d, 12h, 2w or 90m, or an RFC 3339 date-time or a date (YYYY-MM-DD), not %q.", value)
}

func conversationsKind() kind {
	return kind{tool: "delete_conversations", verb: "Delete", nouns: "conversations", destructive: true,
		description: "Delete conversations and their messages, by filter (status, channel, contact_id, source, older_than, or all) or ids (UUIDs or mc- ids). Parks one confirmation stating the count and a sample; the conversation the confirmation is given in is kept.",
		schema:      manage.InputSchema[ConversationsInput](),
		decode: func(raw json.RawMessage) (input, error) {
			v, err := manage.DecodeInput[ConversationsInput]("delete_conversations", raw)
			if err != nil {
				return input{}, err
			}
			in, err := selection(v.Selection, v.Filter != nil, "mc-")
			if err != nil || v.Filter == nil {
				return in, err
			}
			f := v.Filter
			var k keys
			k.all = f.All
			k.add("status", string(f.Status))
			k.add("channel", f.Channel)
			k.add("contact", f.ContactID)
			k.add("source", string(f.Source))
			k.add("older than", f.OlderThan)
			if err := k.check(&in); err != nil {
				return in, err
			}
			if in.set.ContactID, err = optionalUUID("filter.contact_id", f.ContactID); err != nil {
				return in, err
			}
			if in.set.OlderThan, err = olderThan(f.OlderThan, time.Now()); err != nil {
				return in, err
			}
			in.set.Status, in.set.Channel, in.set.Source = string(f.Status), f.Channel, string(f.Source)
			return in, nil
		},
		count: func(ctx context.Context, st *store.Store, ws uuid.UUID, set store.BulkSet) (int, error) {
			return st.CountConversations(ctx, ws, set)
		},
		sample: func(ctx context.Context, st *store.Store, ws uuid.UUID, set store.BulkSet) ([]store.BulkItem, error) {
			return st.SampleConversations(ctx, ws, set)
		},
		apply: func(ctx context.Context, tx *store.Tx, ws uuid.UUID, set store.BulkSet, limit int) (int, error) {
			return tx.DeleteConversations(ctx, ws, set, limit)
		},
	}
}

func channelsKind() kind {
	return kind{tool: "delete_channels", verb: "Delete", nouns: "channels", destructive: true,
		description: "Delete channels and their deployments (the agents on them stop receiving from them), by filter (provider, status deployed or unused, or all) or ids. Parks one confirmation stating the count and a sample.",
		schema:      manage.InputSchema[ChannelsInput](),
		decode: func(raw json.RawMessage) (input, error) {
			v, err := manage.DecodeInput[ChannelsInput]("delete_channels", raw)
			if err != nil {
				return input{}, err
			}
			in, err := selection(v.Selection, v.Filter != nil, "")
			if err != nil || v.Filter == nil {
				return in, err
			}
			f := v.Filter
			k := keys{all: f.All}
			k.add("provider", string(f.Provider))
			k.add("status", string(f.Status))
			if err := k.check(&in); err != nil {
				return in, err
			}
			in.set.Provider, in.set.Status = string(f.Provider), string(f.Status)
			return in, nil
		},
		count: func(ctx context.Context, st *store.Store, ws uuid.UUID, set store.BulkSet) (int, error) {
			return st.CountChannels(ctx, ws, set)
		},
		sample: func(ctx context.Context, st *store.Store, ws uuid.UUID, set store.BulkSet) ([]store.BulkItem, error) {
			return st.SampleChannels(ctx, ws, set)
		},
		apply: func(ctx context.Context, tx *store.Tx, ws uuid.UUID, set store.BulkSet, limit int) (int, error) {
			return tx.DeleteChannels(ctx, ws, set, limit)
		},
	}
}

func deploymentsKind() kind {
	return kind{tool: "undeploy_agents", verb: "Undeploy", nouns: "deployments", destructive: true,
		description: "Undeploy agents: remove deployments, so those agents stop receiving from those channels, by filter (agent_id, channel_id, or all) or ids (deployment ids, as deploy_agent answers them). Parks one confirmation stating the count and a sample.",
		schema:      manage.InputSchema[UndeployInput](),
		decode: func(raw json.RawMessage) (input, error) {
			v, err := manage.DecodeInput[UndeployInput]("undeploy_agents", raw)
			if err != nil {
				return input{}, err
			}
			in, err := selection(v.Selection, v.Filter != nil, "")
			if err != nil || v.Filter == nil {
				return in, err
			}
			f := v.Filter
			k := keys{all: f.All}
			k.add("agent", f.AgentID)
			k.add("channel", f.ChannelID)
			if err := k.check(&in); err != nil {
				return in, err
			}
			if in.set.AgentID, err = optionalUUID("filter.agent_id", f.AgentID); err != nil {
				return in, err
			}
			in.set.ChannelID, err = optionalUUID("filter.channel_id", f.ChannelID)
			return in, err
		},
		count: func(ctx context.Context, st *store.Store, ws uuid.UUID, set store.BulkSet) (int, error) {
			return st.CountDeployments(ctx, ws, set)
		},
		sample: func(ctx context.Context, st *store.Store, ws uuid.UUID, set store.BulkSet) ([]store.BulkItem, error) {
			return st.SampleDeployments(ctx, ws, set)
		},
		apply: func(ctx context.Context, tx *store.Tx, ws uuid.UUID, set store.BulkSet, limit int) (int, error) {
			return tx.DeleteDeployments(ctx, ws, set, limit)
		},
	}
}
