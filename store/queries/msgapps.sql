-- name: InsertAppInboundMessage :one
-- InsertAppInboundMessage records a messaging app's inbound message once, with its kind: a
-- retried webhook (same message id) returns no row.
INSERT INTO channel_messages (workspace_id, channel_id, direction, provider_message_id, remote, local, body, segments, status, kind)
VALUES (@workspace_id, @channel_id, 'inbound', @provider_message_id, @remote, @local, @body, 1, 'received', @kind)
ON CONFLICT (channel_id, direction, provider_message_id) WHERE provider_message_id IS NOT NULL DO NOTHING
RETURNING id;

-- name: ContactByAppUser :one
-- ContactByAppUser is the live contact tied to an app user id.
SELECT c.id, c.name FROM contact_app_ids a JOIN contacts c ON c.id = a.contact_id
WHERE a.workspace_id = @workspace_id AND a.app = @app AND a.app_user_id = @app_user_id AND c.deleted_at IS NULL;

-- name: CreateAppContact :one
INSERT INTO contacts (workspace_id, name, phone, source) VALUES (@workspace_id, sqlc.narg(name), sqlc.narg(phone), 'conversation') RETURNING id;

-- name: LinkAppUser :one
-- LinkAppUser ties an app user id to a contact and returns it; no row when the id is tied
-- already (by a concurrent transaction too, whose commit it waits for): AppUserContact then
-- reads to which contact, in a statement of its own, whose snapshot holds that tie.
INSERT INTO contact_app_ids (workspace_id, app, app_user_id, contact_id) VALUES (@workspace_id, @app, @app_user_id, @contact_id)
ON CONFLICT (workspace_id, app, app_user_id) DO NOTHING
RETURNING contact_id;

-- name: AppUserContact :one
-- AppUserContact is the contact an app user id is tied to, and whether it is live, the tie
-- locked until the transaction ends (RelinkAppUser may move it).
SELECT a.contact_id, (k.deleted_at IS NULL)::bool AS live FROM contact_app_ids a JOIN contacts k ON k.id = a.contact_id
WHERE a.workspace_id = @workspace_id AND a.app = @app AND a.app_user_id = @app_user_id
FOR UPDATE OF a;

-- name: RelinkAppUser :exec
-- RelinkAppUser ties an app user id to another contact: its contact was deleted.
UPDATE contact_app_ids SET contact_id = @contact_id WHERE workspace_id = @workspace_id AND app = @app AND app_user_id = @app_user_id;

-- name: DeleteUnlinkedAppContact :exec
-- DeleteUnlinkedAppContact removes the contact a webhook created for an app user id that
-- another transaction tied to a contact first: nothing names it yet.
DELETE FROM contacts WHERE workspace_id = @workspace_id AND id = @id;

-- name: NameContactIfUnnamed :exec
-- NameContactIfUnnamed gives a contact the name the app shows, unless someone named it.
UPDATE contacts SET name = @name, updated_at = now() WHERE workspace_id = @workspace_id AND id = @id AND (name IS NULL OR name = '');

-- name: LastInboundFrom :one
-- LastInboundFrom is when the remote party last wrote on the channel: the start of an app's
-- customer-service window.
SELECT coalesce(max(created_at), 'epoch')::timestamptz FROM channel_messages
WHERE channel_id = @channel_id AND direction = 'inbound' AND remote = @remote;

-- name: MarkNeedsTemplate :exec
UPDATE conversation_threads SET needs_template_at = now() WHERE workspace_id = @workspace_id AND conversation_id = @conversation_id;

-- name: ClearNeedsTemplate :exec
-- ClearNeedsTemplate reopens the window of the remote party's conversations: they wrote again.
UPDATE conversation_threads SET needs_template_at = NULL WHERE channel_id = @channel_id AND remote = @remote AND needs_template_at IS NOT NULL;

-- name: NeedsTemplate :one
SELECT needs_template_at FROM conversation_threads WHERE workspace_id = @workspace_id AND conversation_id = @conversation_id;
