-- name: InsertContact :one
INSERT INTO contacts (workspace_id, name, email, phone, tags, source, consent_sms, consent_calls, timezone)
VALUES (@workspace_id, sqlc.narg(name), sqlc.narg(email), sqlc.narg(phone), @tags::text[], @source,
        @consent_sms, @consent_calls, sqlc.narg(timezone))
RETURNING *;

-- name: ContactByID :one
SELECT * FROM contacts WHERE workspace_id = @workspace_id AND id = @id;

-- name: LiveContactByPhone :one
SELECT * FROM contacts WHERE workspace_id = @workspace_id AND phone = @phone AND deleted_at IS NULL
ORDER BY created_at LIMIT 1;

-- name: LockLiveContactsByPhone :exec
-- LockLiveContactsByPhone locks the live contacts of these phone numbers, in id order, for a
-- CSV import that will update them in its file's order: a bulk soft delete locks its contacts
-- in id order (BulkSoftDeleteContacts), and two writers taking the same rows in different
-- orders could each hold one the other waits for.
SELECT id FROM contacts WHERE workspace_id = @workspace_id AND phone = ANY(@phones::text[]) AND deleted_at IS NULL
ORDER BY id
FOR NO KEY UPDATE;

-- name: ListContacts :many
-- ListContacts filters by each argument that is given (NULL: any), newest first, keyset
-- paginated after (created_at, id) of the previous page's last row. deleted selects the
-- soft-deleted contacts instead of the live ones.
SELECT * FROM contacts c
WHERE c.workspace_id = @workspace_id
  AND (c.deleted_at IS NOT NULL) = @deleted::bool
  AND (sqlc.narg(tag)::text IS NULL OR sqlc.narg(tag)::text = ANY (c.tags))
  AND (sqlc.narg(list_id)::uuid IS NULL OR EXISTS (
        SELECT 1 FROM contact_list_members m
        WHERE m.workspace_id = c.workspace_id AND m.list_id = sqlc.narg(list_id)::uuid AND m.contact_id = c.id))
  AND (sqlc.narg(consent_sms)::bool IS NULL OR c.consent_sms = sqlc.narg(consent_sms)::bool)
  AND (sqlc.narg(consent_calls)::bool IS NULL OR c.consent_calls = sqlc.narg(consent_calls)::bool)
  AND (sqlc.narg(q)::text IS NULL OR c.name ILIKE '%' || sqlc.narg(q)::text || '%' ESCAPE '\'
       OR c.email ILIKE '%' || sqlc.narg(q)::text || '%' ESCAPE '\' OR c.phone LIKE '%' || sqlc.narg(q)::text || '%' ESCAPE '\')
  AND (sqlc.narg(after_created)::timestamptz IS NULL
       OR (c.created_at, c.id) < (sqlc.narg(after_created)::timestamptz, sqlc.narg(after_id)::uuid))
ORDER BY c.created_at DESC, c.id DESC
LIMIT @max_rows;

-- name: UpdateContact :one
UPDATE contacts SET name = sqlc.narg(name), email = sqlc.narg(email), phone = sqlc.narg(phone), tags = @tags::text[],
    consent_sms = @consent_sms, consent_calls = @consent_calls, timezone = sqlc.narg(timezone), updated_at = now()
WHERE workspace_id = @workspace_id AND id = @id AND deleted_at IS NULL
RETURNING *;

-- name: SoftDeleteContact :one
UPDATE contacts SET deleted_at = coalesce(deleted_at, now()), updated_at = now()
WHERE workspace_id = @workspace_id AND id = @id
RETURNING *;

-- name: RestoreContact :one
UPDATE contacts SET deleted_at = NULL, updated_at = now()
WHERE workspace_id = @workspace_id AND id = @id
RETURNING *;

-- name: EnsureContactList :one
-- EnsureContactList returns the list of that name (case-insensitive), creating it if needed.
INSERT INTO contact_lists (workspace_id, name) VALUES (@workspace_id, @name)
ON CONFLICT (workspace_id, lower(name)) DO UPDATE SET name = contact_lists.name
RETURNING id, name;

-- name: ContactListByID :one
SELECT id, name FROM contact_lists WHERE workspace_id = @workspace_id AND id = @id;

-- name: ListContactLists :many
SELECT l.id, l.name, l.created_at,
       (SELECT count(*) FROM contact_list_members m JOIN contacts c ON c.id = m.contact_id
        WHERE m.list_id = l.id AND c.deleted_at IS NULL)::bigint AS contacts
FROM contact_lists l WHERE l.workspace_id = @workspace_id
ORDER BY lower(l.name);

-- name: AddContactToList :exec
INSERT INTO contact_list_members (workspace_id, list_id, contact_id) VALUES (@workspace_id, @list_id, @contact_id)
ON CONFLICT DO NOTHING;

-- name: ClearContactLists :exec
DELETE FROM contact_list_members WHERE workspace_id = @workspace_id AND contact_id = @contact_id;

-- name: ContactListsOf :many
-- ContactListsOf names the lists of each contact given.
SELECT m.contact_id, l.id, l.name FROM contact_list_members m JOIN contact_lists l ON l.id = m.list_id
WHERE m.workspace_id = @workspace_id AND m.contact_id = ANY (@contact_ids::uuid[])
ORDER BY lower(l.name);

-- name: KeyShareContacts :exec
-- KeyShareContacts is KeyShareContact for several contacts (each of the workspace at the same
-- place of @workspace_ids), locked in id order, as erasures of several contacts lock them.
SELECT c.id FROM contacts c
JOIN (SELECT unnest(@workspace_ids::uuid[]) AS workspace_id, unnest(@ids::uuid[]) AS id) AS i
  ON c.workspace_id = i.workspace_id AND c.id = i.id
ORDER BY c.id
FOR KEY SHARE OF c;

-- name: KeyShareContact :exec
-- KeyShareContact takes the KEY SHARE lock of a contact until the transaction ends (nothing
-- when it is gone): the lock a contact's erasure waits for (it locks the contact FOR UPDATE
-- first), for a transaction that will write the contact's rows after others of its own.
SELECT id FROM contacts WHERE workspace_id = @workspace_id AND id = @id FOR KEY SHARE;
