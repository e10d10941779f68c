package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"

	"switchboard/store/internal/dbsqlc"
)

// BulkSet is the rows one bulk tool acts on: an explicit id list (ByIDs), or the filter keys
// of its kind (an empty key matches all), and never a row created after Cutoff.
type BulkSet struct {
	Cutoff time.Time
	ByIDs  bool
	IDs    []uuid.UUID
	Refs   []string // conversations: `mc-` ids, beside IDs

	// conversations
	Status    string
	Channel   string
	ContactID *uuid.UUID
	Source    string // assistant (builder assistant turns) or agent (a deployed agent's)
	OlderThan *time.Time
	ExcludeID *uuid.UUID // the conversation a confirmation was given in
	// channels (Status too: deployed or unused)
	Provider string
	// deployments
	AgentID   *uuid.UUID
	ChannelID *uuid.UUID
	// contacts
	Tag    string
	ListID *uuid.UUID
	// campaigns (Status too): the statuses the tool may touch
	Statuses []string
}

func (s BulkSet) refs() []string {
	if s.Refs == nil {
		return []string{}
	}
	return s.Refs
}

func (s BulkSet) ids() []uuid.UUID {
	if s.IDs == nil {
		return []uuid.UUID{}
	}
	return s.IDs
}

// BulkItem names one row of a bulk set for a sample.
type BulkItem struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// CountConversations counts the conversations of a bulk set.
func (q *queries) CountConversations(ctx context.Context, ws uuid.UUID, s BulkSet) (int, error) {
	n, err := q.sql.BulkCountConversations(ctx, q.db, dbsqlc.BulkCountConversationsParams{WorkspaceID: ws, Cutoff: s.Cutoff,
		ByIds: s.ByIDs, Ids: s.ids(), Refs: s.refs(), Status: s.Status, Channel: s.Channel, ContactID: s.ContactID, Source: s.Source,
		OlderThan: s.OlderThan, ExcludeID: s.ExcludeID})
	return int(n), err
}

// SampleConversations names up to five conversations of a bulk set, newest first.
func (q *queries) SampleConversations(ctx context.Context, ws uuid.UUID, s BulkSet) ([]BulkItem, error) {
	rows, err := q.sql.BulkSampleConversations(ctx, q.db, dbsqlc.BulkSampleConversationsParams{WorkspaceID: ws, Cutoff: s.Cutoff,
		ByIds: s.ByIDs, Ids: s.ids(), Refs: s.refs(), Status: s.Status, Channel: s.Channel, ContactID: s.ContactID, Source: s.Source,
		OlderThan: s.OlderThan, ExcludeID: s.ExcludeID})
	return mapRows(rows, func(r dbsqlc.BulkSampleConversationsRow) BulkItem {
		return BulkItem{ID: r.ShortID, Name: r.ShortID + " (" + r.Channel + ", " + r.Status + ", " + r.CreatedAt.UTC().Format("2006-01-02") + ")"}
	}), err
}

// DeleteConversations deletes at most limit conversations of a bulk set (with their
// messages) and returns how many.
func (q *queries) DeleteConversations(ctx context.Context, ws uuid.UUID, s BulkSet, limit int) (int, error) {
	n, err := q.sql.BulkDeleteConversations(ctx, q.db, dbsqlc.BulkDeleteConversationsParams{WorkspaceID: ws, Cutoff: s.Cutoff,
		ByIds: s.ByIDs, Ids: s.ids(), Refs: s.refs(), Status: s.Status, Channel: s.Channel, ContactID: s.ContactID, Source: s.Source,
		OlderThan: s.OlderThan, ExcludeID: s.ExcludeID, MaxRows: int32(limit)})
	return int(n), err
}

// CountChannels counts the channels of a bulk set.
func (q *queries) CountChannels(ctx context.Context, ws uuid.UUID, s BulkSet) (int, error) {
	n, err := q.sql.BulkCountChannels(ctx, q.db, dbsqlc.BulkCountChannelsParams{WorkspaceID: ws, Cutoff: s.Cutoff,
		ByIds: s.ByIDs, Ids: s.ids(), Provider: s.Provider, Status: s.Status})
	return int(n), err
}

// SampleChannels names up to five channels of a bulk set, newest first.
func (q *queries) SampleChannels(ctx context.Context, ws uuid.UUID, s BulkSet) ([]BulkItem, error) {
	rows, err := q.sql.BulkSampleChannels(ctx, q.db, dbsqlc.BulkSampleChannelsParams{WorkspaceID: ws, Cutoff: s.Cutoff,
		ByIds: s.ByIDs, Ids: s.ids(), Provider: s.Provider, Status: s.Status})
	return mapRows(rows, func(r dbsqlc.BulkSampleChannelsRow) BulkItem {
		return BulkItem{ID: r.ID.String(), Name: r.Name + " (" + r.Provider + ")"}
	}), err
}

// DeleteChannels deletes at most limit channels of a bulk set (with their deployments).
func (q *queries) DeleteChannels(ctx context.Context, ws uuid.UUID, s BulkSet, limit int) (int, error) {
	n, err := q.sql.BulkDeleteChannels(ctx, q.db, dbsqlc.BulkDeleteChannelsParams{WorkspaceID: ws, Cutoff: s.Cutoff,
		ByIds: s.ByIDs, Ids: s.ids(), Provider: s.Provider, Status: s.Status, MaxRows: int32(limit)})
	return int(n), err
}

// CountDeployments counts the deployments of a bulk set.
func (q *queries) CountDeployments(ctx context.Context, ws uuid.UUID, s BulkSet) (int, error) {
	n, err := q.sql.BulkCountDeployments(ctx, q.db, dbsqlc.BulkCountDeploymentsParams{WorkspaceID: ws, Cutoff: s.Cutoff,
		ByIds: s.ByIDs, Ids: s.ids(), AgentID: s.AgentID, ChannelID: s.ChannelID})
	return int(n), err
}

// SampleDeployments names up to five deployments of a bulk set: agent and channel.
func (q *queries) SampleDeployments(ctx context.Context, ws uuid.UUID, s BulkSet) ([]BulkItem, error) {
	rows, err := q.sql.BulkSampleDeployments(ctx, q.db, dbsqlc.BulkSampleDeploymentsParams{WorkspaceID: ws, Cutoff: s.Cutoff,
		ByIds: s.ByIDs, Ids: s.ids(), AgentID: s.AgentID, ChannelID: s.ChannelID})
	return mapRows(rows, func(r dbsqlc.BulkSampleDeploymentsRow) BulkItem {
		where := r.ChannelType
		if r.ChannelName != "" {
			where = r.ChannelName + " (" + r.ChannelType + ")"
		}
		return BulkItem{ID: r.ID.String(), Name: r.AgentName + " on " + where}
	}), err
}

// DeleteDeployments deletes at most limit deployments of a bulk set.
func (q *queries) DeleteDeployments(ctx context.Context, ws uuid.UUID, s BulkSet, limit int) (int, error) {
	n, err := q.sql.BulkDeleteDeployments(ctx, q.db, dbsqlc.BulkDeleteDeploymentsParams{WorkspaceID: ws, Cutoff: s.Cutoff,
		ByIds: s.ByIDs, Ids: s.ids(), AgentID: s.AgentID, ChannelID: s.ChannelID, MaxRows: int32(limit)})
	return int(n), err
}

// CountContacts counts the live contacts of a bulk set.
func (q *queries) CountContacts(ctx context.Context, ws uuid.UUID, s BulkSet) (int, error) {
	n, err := q.sql.BulkCountContacts(ctx, q.db, dbsqlc.BulkCountContactsParams{WorkspaceID: ws, Cutoff: s.Cutoff,
		ByIds: s.ByIDs, Ids: s.ids(), Tag: s.Tag, ListID: s.ListID})
	return int(n), err
}

// SampleContacts names up to five live contacts of a bulk set, newest first.
func (q *queries) SampleContacts(ctx context.Context, ws uuid.UUID, s BulkSet) ([]BulkItem, error) {
	rows, err := q.sql.BulkSampleContacts(ctx, q.db, dbsqlc.BulkSampleContactsParams{WorkspaceID: ws, Cutoff: s.Cutoff,
		ByIds: s.ByIDs, Ids: s.ids(), Tag: s.Tag, ListID: s.ListID})
	return mapRows(rows, func(r dbsqlc.BulkSampleContactsRow) BulkItem {
		return BulkItem{ID: r.ID.String(), Name: r.Label}
	}), err
}

// SoftDeleteContacts soft-deletes at most limit live contacts of a bulk set.
func (q *queries) SoftDeleteContacts(ctx context.Context, ws uuid.UUID, s BulkSet, limit int) (int, error) {
	n, err := q.sql.BulkSoftDeleteContacts(ctx, q.db, dbsqlc.BulkSoftDeleteContactsParams{WorkspaceID: ws, Cutoff: s.Cutoff,
		ByIds: s.ByIDs, Ids: s.ids(), Tag: s.Tag, ListID: s.ListID, MaxRows: int32(limit)})
	return int(n), err
}

func (s BulkSet) statuses() []string {
	if s.Statuses == nil {
		return []string{}
	}
	return s.Statuses
}

// CountCampaigns counts the campaigns of a bulk set.
func (q *queries) CountCampaigns(ctx context.Context, ws uuid.UUID, s BulkSet) (int, error) {
	n, err := q.sql.BulkCountCampaigns(ctx, q.db, dbsqlc.BulkCountCampaignsParams{WorkspaceID: ws, Cutoff: s.Cutoff,
		ByIds: s.ByIDs, Ids: s.ids(), Status: s.Status, Statuses: s.statuses()})
	return int(n), err
}

// SampleCampaigns names up to limit campaigns of a bulk set, newest first.
func (q *queries) SampleCampaigns(ctx context.Context, ws uuid.UUID, s BulkSet, limit int) ([]BulkItem, error) {
	rows, err := q.sql.BulkSampleCampaigns(ctx, q.db, dbsqlc.BulkSampleCampaignsParams{WorkspaceID: ws, Cutoff: s.Cutoff,
		ByIds: s.ByIDs, Ids: s.ids(), Status: s.Status, Statuses: s.statuses(), MaxRows: int32(limit)})
	return mapRows(rows, func(r dbsqlc.BulkSampleCampaignsRow) BulkItem {
		return BulkItem{ID: r.ID.String(), Name: r.Name + " (" + r.Status + ")"}
	}), err
}

// DeleteCampaigns deletes at most limit campaigns of a bulk set (with their sends).
func (q *queries) DeleteCampaigns(ctx context.Context, ws uuid.UUID, s BulkSet, limit int) (int, error) {
	n, err := q.sql.BulkDeleteCampaigns(ctx, q.db, dbsqlc.BulkDeleteCampaignsParams{WorkspaceID: ws, Cutoff: s.Cutoff,
		ByIds: s.ByIDs, Ids: s.ids(), Status: s.Status, Statuses: s.statuses(), MaxRows: int32(limit)})
	return int(n), err
}

// CancelCampaigns cancels at most limit campaigns of a bulk set.
func (q *queries) CancelCampaigns(ctx context.Context, ws uuid.UUID, s BulkSet, limit int) (int, error) {
	n, err := q.sql.BulkCancelCampaigns(ctx, q.db, dbsqlc.BulkCancelCampaignsParams{WorkspaceID: ws, Cutoff: s.Cutoff,
		ByIds: s.ByIDs, Ids: s.ids(), Status: s.Status, Statuses: s.statuses(), MaxRows: int32(limit)})
	return int(n), err
}

// BulkRun is one bulk action as it runs (package bulk).
type BulkRun struct {
	ID             uuid.UUID
	ShortID        string // bulk_...
	Tool           string
	Spec           json.RawMessage
	Status         string // running, completed, failed
	Requested      int
	Affected       int
	Skipped        json.RawMessage
	Sample         json.RawMessage
	Batches        int
	LongestBatchMS int
	Error          string
	CreatedAt      time.Time
	FinishedAt     *time.Time
}

func bulkRun(r dbsqlc.BulkRun) BulkRun {
	out := BulkRun{ID: r.ID, ShortID: r.ShortID, Tool: r.Tool, Spec: r.Spec, Status: r.Status, Requested: r.Requested,
		Affected: r.Affected, Skipped: r.Skipped, Sample: r.Sample, Batches: r.Batches, LongestBatchMS: r.LongestBatchMs,
		CreatedAt: r.CreatedAt, FinishedAt: r.FinishedAt}
	if r.Error != nil {
		out.Error = *r.Error
	}
	return out
}

// CreateBulkRun records a bulk action about to run (its job is enqueued in the same
// transaction).
func (q *queries) CreateBulkRun(ctx context.Context, ws uuid.UUID, r BulkRun) error {
	return q.sql.CreateBulkRun(ctx, q.db, dbsqlc.CreateBulkRunParams{ID: r.ID, WorkspaceID: ws, ShortID: r.ShortID, Tool: r.Tool,
		Spec: r.Spec, Requested: r.Requested, Sample: r.Sample, Skipped: r.Skipped})
}

// BulkRunProgress adds one batch's rows and duration to a run.
func (q *queries) BulkRunProgress(ctx context.Context, ws, id uuid.UUID, added int, batch time.Duration) error {
	return q.sql.BulkRunProgress(ctx, q.db, dbsqlc.BulkRunProgressParams{WorkspaceID: ws, ID: id, Added: added, BatchMs: int(batch.Milliseconds())})
}

// FinishBulkRun ends a running run as completed or failed (with why).
func (q *queries) FinishBulkRun(ctx context.Context, ws, id uuid.UUID, status, failure string) error {
	var e *string
	if failure != "" {
		e = &failure
	}
	return q.sql.FinishBulkRun(ctx, q.db, dbsqlc.FinishBulkRunParams{WorkspaceID: ws, ID: id, Status: status, Error: e})
}

// BulkRunByID returns a run of the workspace.
func (q *queries) BulkRunByID(ctx context.Context, ws, id uuid.UUID) (BulkRun, error) {
	r, err := q.sql.BulkRunByID(ctx, q.db, dbsqlc.BulkRunByIDParams{WorkspaceID: ws, ID: id})
	return bulkRun(r), notFound("bulk run", err)
}

// BulkRunByShortID returns a run of the workspace by its bulk_ id.
func (q *queries) BulkRunByShortID(ctx context.Context, ws uuid.UUID, shortID string) (BulkRun, error) {
	r, err := q.sql.BulkRunByShortID(ctx, q.db, dbsqlc.BulkRunByShortIDParams{WorkspaceID: ws, ShortID: shortID})
	return bulkRun(r), notFound("bulk run", err)
}
