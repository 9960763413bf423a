package toolsearch

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"hash/fnv"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite testdata/noise.json from the generator")

const noisePath = "testdata/noise.json"

// TestGenerateCorpus checks that testdata/noise.json is what the generator
// writes; with -update it rewrites the file. The noise is deterministic: it
// depends only on the tables below.
func TestGenerateCorpus(t *testing.T) {
	got, err := json.MarshalIndent(noiseTools(), "", " ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	if *update {
		if err := os.WriteFile(noisePath, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(noisePath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is stale; run go test ./internal/toolsearch -run TestGenerateCorpus -update", noisePath)
	}
}

// noun is a thing a service manages: its singular and plural names and the
// fields it is created with.
type noun struct{ one, many, fields string }

// service is a synthetic MCP server: a server name, the product it fronts
// and the nouns it manages.
type service struct {
	server, product string
	nouns           []noun
}

// services are the noise: products of many domains whose nouns overlap the
// real servers' (files, issues, messages, nodes, relations, entries) so
// that near-miss tools compete in every ranking.
var services = []service{
	{"salesforce", "Salesforce CRM", []noun{{"contact", "contacts", "first_name,last_name,email,phone"}, {"account", "accounts", "name,industry,website"}, {"opportunity", "opportunities", "name,amount,stage,close_date"}, {"lead", "leads", "name,company,email,source"}}},
	{"zendesk", "Zendesk", []noun{{"ticket", "tickets", "subject,description,priority,requester"}, {"macro", "macros", "title,actions"}, {"agent", "agents", "name,email,role"}}},
	{"notion", "Notion", []noun{{"page", "pages", "parent_id,title,content"}, {"database", "databases", "parent_id,title,properties"}, {"block", "blocks", "page_id,type,text"}}},
	{"confluence", "Confluence", []noun{{"page", "pages", "space_key,title,body"}, {"space", "spaces", "key,name,description"}, {"comment", "comments", "page_id,body"}}},
	{"gcal", "Google Calendar", []noun{{"event", "events", "calendar_id,summary,start,end,attendees"}, {"calendar", "calendars", "summary,time_zone"}, {"reminder", "reminders", "event_id,minutes_before"}}},
	{"outlook", "Outlook mail", []noun{{"message", "messages", "to,subject,body"}, {"draft", "drafts", "to,subject,body"}, {"folder", "folders", "display_name,parent_folder_id"}}},
	{"dropbox", "Dropbox", []noun{{"file", "files", "path,content,mode"}, {"folder", "folders", "path"}, {"shared_link", "shared_links", "path,expires"}}},
	{"s3", "Amazon S3", []noun{{"bucket", "buckets", "name,region"}, {"object", "objects", "bucket,key,body,content_type"}}},
	{"kubernetes", "Kubernetes cluster", []noun{{"pod", "pods", "namespace,name,image"}, {"deployment", "deployments", "namespace,name,replicas,image"}, {"service", "services", "namespace,name,port"}, {"namespace", "namespaces", "name,labels"}}},
	{"docker", "Docker engine", []noun{{"container", "containers", "image,name,command,ports"}, {"image", "images", "name,tag"}, {"volume", "volumes", "name,driver"}}},
	{"jira", "Jira", []noun{{"issue", "issues", "project_key,summary,description,issue_type"}, {"sprint", "sprints", "board_id,name,goal"}, {"board", "boards", "name,project_key"}}},
	{"linear", "Linear", []noun{{"issue", "issues", "team_id,title,description,priority"}, {"project", "projects", "name,lead_id,target_date"}, {"cycle", "cycles", "team_id,starts_at,ends_at"}}},
	{"stripe", "Stripe", []noun{{"customer", "customers", "email,name,metadata"}, {"invoice", "invoices", "customer_id,items,due_date"}, {"payment", "payments", "amount,currency,customer_id"}, {"subscription", "subscriptions", "customer_id,price_id"}}},
	{"shopify", "Shopify store", []noun{{"product", "products", "title,price,inventory"}, {"order", "orders", "customer_id,line_items,shipping_address"}, {"collection", "collections", "title,rules"}}},
	{"mixpanel", "Mixpanel analytics", []noun{{"report", "reports", "name,query,date_range"}, {"dashboard", "dashboards", "name,reports"}, {"cohort", "cohorts", "name,filter"}}},
	{"mysql", "MySQL database", []noun{{"table", "tables", "schema,name,columns"}, {"row", "rows", "table,values"}, {"index", "indexes", "table,columns,unique"}}},
	{"pinecone", "Pinecone vector database", []noun{{"vector", "vectors", "index,values,metadata"}, {"index", "indexes", "name,dimension,metric"}, {"namespace", "namespaces", "index,name"}}},
	{"zep", "Zep long-term memory store", []noun{{"memory", "memories", "session_id,content,metadata"}, {"session", "sessions", "user_id,metadata"}, {"fact", "facts", "session_id,text"}}},
	{"neo4j", "Neo4j graph database", []noun{{"node", "nodes", "labels,properties"}, {"relationship", "relationships", "from_id,to_id,type,properties"}, {"constraint", "constraints", "label,property"}}},
	{"helpscout", "Help Scout knowledge base", []noun{{"article", "articles", "collection_id,title,text"}, {"category", "categories", "name,collection_id"}}},
	{"bamboohr", "BambooHR", []noun{{"employee", "employees", "first_name,last_name,department,hire_date"}, {"time_off_request", "time_off_requests", "employee_id,start,end,type"}}},
	{"twitter", "X (Twitter)", []noun{{"post", "posts", "text,media_ids,reply_to"}, {"follower", "followers", "user_id"}, {"list", "lists", "name,description,private"}}},
	{"discord", "Discord", []noun{{"message", "messages", "channel_id,content,embeds"}, {"channel", "channels", "guild_id,name,topic"}, {"role", "roles", "guild_id,name,permissions"}}},
	{"trello", "Trello", []noun{{"card", "cards", "list_id,name,desc,due"}, {"list", "lists", "board_id,name"}, {"board", "boards", "name,desc"}}},
	{"figma", "Figma", []noun{{"file", "files", "project_id,name"}, {"comment", "comments", "file_key,message"}, {"component", "components", "file_key,name"}}},
	{"spotify", "Spotify", []noun{{"playlist", "playlists", "name,description,public"}, {"track", "tracks", "playlist_id,uri"}}},
	{"cloudflare", "Cloudflare DNS", []noun{{"dns_record", "dns_records", "zone_id,type,name,content,ttl"}, {"zone", "zones", "name,account_id"}}},
	{"datadog", "Datadog", []noun{{"monitor", "monitors", "name,query,threshold"}, {"incident", "incidents", "title,severity"}, {"dashboard", "dashboards", "title,widgets"}}},
	{"sentry", "Sentry", []noun{{"issue", "issues", "project,status"}, {"release", "releases", "version,projects"}, {"alert_rule", "alert_rules", "project,conditions,actions"}}},
	{"circleci", "CircleCI", []noun{{"pipeline", "pipelines", "project_slug,branch,parameters"}, {"job", "jobs", "pipeline_id,name"}, {"artifact", "artifacts", "job_number,path"}}},
	{"wordpress", "WordPress site", []noun{{"post", "posts", "title,content,status,categories"}, {"page", "pages", "title,content,parent"}, {"media_item", "media_items", "file,alt_text"}}},
	{"todoist", "Todoist", []noun{{"task", "tasks", "content,due_string,priority,project_id"}, {"project", "projects", "name,color"}, {"label", "labels", "name,color"}}},
	{"airtable", "Airtable", []noun{{"record", "records", "base_id,table,fields"}, {"base", "bases", "name,workspace_id"}, {"field", "fields", "table,name,type"}}},
	{"hubspot", "HubSpot", []noun{{"contact", "contacts", "email,firstname,lastname"}, {"deal", "deals", "dealname,amount,pipeline"}, {"note", "notes", "body,associations"}}},
	{"gdocs", "Google Docs", []noun{{"document", "documents", "title,body"}, {"comment", "comments", "document_id,content"}}},
	{"twilio", "Twilio", []noun{{"sms", "sms_messages", "to,from,body"}, {"call", "calls", "to,from,twiml"}}},
	{"obsidian", "Obsidian vault", []noun{{"note", "notes", "path,content,tags"}, {"tag", "tags", "name"}}},
	{"redis_cache", "Redis cache", []noun{{"key", "keys", "key,value,ttl_seconds"}, {"hash", "hashes", "key,fields"}}},
}

// noiseVerbs are the operations a noun may get, each with description templates
// (%[1]s one, %[2]s many, %[3]s product) and its annotations.
var noiseVerbs = []struct {
	name, params string
	how          []string
	readOnly     bool
	destructive  bool
	always       bool
}{
	{"list_%[2]s", "limit,cursor,filter", []string{"List %[2]s in %[3]s, newest first, with paging.", "Return a page of %[2]s from %[3]s.", "Enumerate all %[2]s of the %[3]s workspace."}, true, false, true},
	{"get_%[1]s", "%[1]s_id", []string{"Get one %[1]s from %[3]s by its ID, with all its fields.", "Fetch the details of a %[1]s in %[3]s.", "Retrieve a single %[1]s record from %[3]s."}, true, false, true},
	{"create_%[1]s", "%[4]s", []string{"Create a new %[1]s in %[3]s.", "Add a %[1]s to %[3]s and return its ID.", "Make a new %[1]s in %[3]s from the given fields."}, false, false, true},
	{"delete_%[1]s", "%[1]s_id", []string{"Permanently delete a %[1]s from %[3]s.", "Delete the %[1]s with the given ID from %[3]s; this cannot be undone.", "Remove a %[1]s from %[3]s for good."}, false, true, true},
	{"update_%[1]s", "%[1]s_id,%[4]s", []string{"Update fields of an existing %[1]s in %[3]s.", "Change a %[1]s in %[3]s; only the given fields are written.", "Edit a %[1]s stored in %[3]s."}, false, false, false},
	{"search_%[2]s", "query,limit", []string{"Search %[2]s in %[3]s by keyword.", "Find %[2]s in %[3]s that match a text query.", "Full-text search over %[3]s %[2]s."}, true, false, false},
	{"remove_%[1]s_from_%[3]s", "%[1]s_id,reason", []string{"Remove a %[1]s and everything attached to it from %[3]s.", "Detach and remove a %[1]s from %[3]s."}, false, true, false},
	{"archive_%[1]s", "%[1]s_id", []string{"Archive a %[1]s in %[3]s so it is hidden but kept.", "Move a %[1]s of %[3]s to the archive."}, false, false, false},
	{"export_%[2]s", "format,since", []string{"Export %[2]s from %[3]s as CSV or JSON.", "Download all %[2]s of %[3]s in bulk."}, true, false, false},
	{"count_%[2]s", "filter", []string{"Count %[2]s in %[3]s matching a filter.", "Return how many %[2]s %[3]s holds."}, true, false, false},
	{"add_%[1]s_tag", "%[1]s_id,tag", []string{"Add a tag or label to a %[1]s in %[3]s.", "Attach a label to a %[1]s stored in %[3]s."}, false, false, false},
	{"clear_%[2]s", "confirm", []string{"Delete every %[1]s in %[3]s at once.", "Wipe all %[2]s of %[3]s."}, false, true, false},
}

// noiseTool is one generated tool, in the corpus format.
type noiseTool struct {
	Server      string          `json:"server"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
	Annotations map[string]bool `json:"annotations,omitempty"`
}

// noiseTools generates the noise deterministically: every noun gets the
// always-noiseVerbs, and each other verb when a hash of the pair says so.
func noiseTools() []noiseTool {
	var out []noiseTool
	for si, s := range services {
		short := strings.ToLower(strings.Fields(s.product)[0])
		for _, n := range s.nouns {
			for _, v := range noiseVerbs {
				h := hash(s.server + n.one + v.name)
				if !v.always && h%100 >= 25 {
					continue
				}
				t := noiseTool{
					Server:      s.server,
					Name:        fmt.Sprintf(v.name, n.one, n.many, short),
					Description: fmt.Sprintf(v.how[h%uint32(len(v.how))], strings.ReplaceAll(n.one, "_", " "), strings.ReplaceAll(n.many, "_", " "), s.product),
					InputSchema: schemaFor(fmt.Sprintf(v.params, n.one, n.many, short, n.fields), s.product),
				}
				// About two services in three declare annotations, like the
				// real servers (some do, some don't).
				if si%3 != 2 {
					t.Annotations = map[string]bool{"readOnlyHint": v.readOnly, "destructiveHint": v.destructive}
				}
				out = append(out, t)
			}
		}
	}
	return out
}

// schemaFor is an object schema with the comma-separated params, each a
// string with a short description.
func schemaFor(params, product string) json.RawMessage {
	props := map[string]any{}
	for _, p := range strings.Split(params, ",") {
		if p == "" {
			continue
		}
		props[p] = map[string]string{"type": "string", "description": fmt.Sprintf("The %s (%s)", strings.ReplaceAll(p, "_", " "), product)}
	}
	b, _ := json.Marshal(map[string]any{"type": "object", "properties": props})
	return b
}

func hash(s string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(s))
	return h.Sum32()
}

func TestNoiseHasNearMisses(t *testing.T) {
	verbsSeen := map[string]bool{}
	for _, n := range noiseTools() {
		verbsSeen[strings.SplitN(n.Name, "_", 2)[0]] = true
	}
	want := map[string]bool{"list": true, "get": true, "create": true, "delete": true, "update": true, "search": true, "remove": true, "archive": true, "export": true, "count": true, "add": true, "clear": true}
	if diff := cmp.Diff(want, verbsSeen); diff != "" {
		t.Errorf("noise noiseVerbs (-want +got):\n%s", diff)
	}
}
