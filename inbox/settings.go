package inbox

import (
	"context"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"switchboard/apierr"
)

// Settings is the workspace's inbox settings and, for a person, their own (schema
// InboxSettings).
type Settings struct {
	Object             string `json:"object"`
	NotifyAfterSeconds int    `json:"notify_after_seconds"`
	// Waiting counts the escalated conversations nobody holds.
	Waiting int64 `json:"waiting"`
	Me      *Me   `json:"me"`
}

// Me is the acting person's inbox preferences (null for a key).
type Me struct {
	ID              uuid.UUID `json:"id"`
	Email           string    `json:"email"`
	Name            string    `json:"name"`
	NotifyUnclaimed bool      `json:"notify_unclaimed"`
}

// Bounds of the unclaimed-conversation delay.
const (
	MinNotifyAfter = 30 * time.Second
	MaxNotifyAfter = 24 * time.Hour
)

// Settings reads the inbox settings.
func (s *Service) Settings(ctx context.Context, workspaceID uuid.UUID, actor Actor) (Settings, error) {
	after, err := s.store.InboxNotifyAfter(ctx, workspaceID)
	if err != nil {
		return Settings{}, err
	}
	waiting, err := s.store.WaitingConversations(ctx, workspaceID)
	if err != nil {
		return Settings{}, err
	}
	out := Settings{Object: "inbox.settings", NotifyAfterSeconds: int(after / time.Second), Waiting: waiting}
	if actor.Person() {
		u, err := s.store.InboxUser(ctx, workspaceID, actor.UserID)
		if err != nil {
			return Settings{}, err
		}
		out.Me = &Me{ID: u.ID, Email: u.Email, Name: DisplayName(u.DisplayName, u.Email), NotifyUnclaimed: u.NotifyUnclaimed}
	}
	return out, nil
}

// SetNotifyAfter changes how long an escalated conversation may wait unclaimed before the
// people who opted in are emailed.
func (s *Service) SetNotifyAfter(ctx context.Context, workspaceID uuid.UUID, actor Actor, seconds int) (Settings, error) {
	d := time.Duration(seconds) * time.Second
	if d < MinNotifyAfter || d > MaxNotifyAfter {
		return Settings{}, apierr.Invalid("notify_after_seconds", "invalid_value", "notify_after_seconds must be 30 to 86400 (a day).")
	}
	if err := s.store.SetInboxNotifyAfter(ctx, workspaceID, d); err != nil {
		return Settings{}, err
	}
	return s.Settings(ctx, workspaceID, actor)
}

// SetMine changes the acting person's display name and email opt-in (nil: unchanged).
func (s *Service) SetMine(ctx context.Context, workspaceID uuid.UUID, actor Actor, name *string, notify *bool) (Settings, error) {
	if !actor.Person() {
		return Settings{}, apierr.Invalid("body", "session_required", "These are a person's own settings: sign in to the dashboard. A key acts as the workspace and has none.")
	}
	if name != nil {
		trimmed := strings.TrimSpace(*name)
		if trimmed == "" || utf8.RuneCountInString(trimmed) > 80 {
			return Settings{}, apierr.Invalid("name", "invalid_value", "name must be 1 to 80 characters.")
		}
		name = &trimmed
	}
	if _, err := s.store.SetUserInboxPrefs(ctx, workspaceID, actor.UserID, name, notify); err != nil {
		return Settings{}, err
	}
	return s.Settings(ctx, workspaceID, actor)
}
