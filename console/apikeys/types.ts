// What GET /keys answers for one key (docs/API.md); the list page and the create form share it.

export type KeyRow = { id: string; name: string; scopes: string[]; config_ids: string[] | null; created_at: string; revoked_at: string | null };
