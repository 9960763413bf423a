# Writes synthetic_tools.json: a realistic catalogue of 200+ tools of common
# services, for the ranking quality test (upstream/quality_test.go).
import json
spec = {
"github": """list_commits|List commits on a branch of a repository, newest first|owner,repo,sha,since,until,per_page
get_commit|Get one commit with its diff stats and changed files|owner,repo,sha
list_pull_requests|List pull requests of a repository filtered by state|owner,repo,state,base
get_pull_request|Get a pull request with its title, body, reviewers and merge state|owner,repo,pull_number
create_pull_request|Open a new pull request from a head branch into a base branch|owner,repo,title,head,base,body
merge_pull_request|Merge a pull request using merge, squash or rebase|owner,repo,pull_number,merge_method
list_issues|List issues of a repository with labels, assignees and state filters|owner,repo,state,labels,assignee
create_issue|Create a new issue in a repository|owner,repo,title,body,labels
add_issue_comment|Add a comment to an issue or pull request|owner,repo,issue_number,body
search_code|Search source code across GitHub repositories|query,per_page
search_repositories|Search repositories by name, topic or language|query,sort
create_branch|Create a new branch from an existing ref|owner,repo,branch,from_branch
get_file_contents|Get the contents of a file or directory in a repository|owner,repo,path,ref
list_workflow_runs|List GitHub Actions workflow runs and their conclusions|owner,repo,workflow_id,status
list_releases|List published releases and their tags|owner,repo""",
"slack": """send_message|Post a message to a Slack channel or thread|channel,text,thread_ts
list_channels|List public and private channels in the workspace|types,limit
get_channel_history|Fetch recent messages from a channel|channel,limit,oldest
add_reaction|Add an emoji reaction to a message|channel,timestamp,name
get_user_profile|Get a Slack user's profile, title and status|user_id
list_users|List members of the Slack workspace|limit,cursor
search_messages|Search messages across channels by keywords|query,count
create_channel|Create a new Slack channel|name,is_private
invite_to_channel|Invite users to a Slack channel|channel,users
set_channel_topic|Set the topic of a channel|channel,topic
upload_file|Upload a file and share it in channels|channels,filename,content
schedule_message|Schedule a message to be sent later|channel,text,post_at
pin_message|Pin a message in a channel|channel,timestamp
get_thread_replies|Get all replies in a message thread|channel,thread_ts""",
"jira": """create_issue|Create a Jira issue (bug, story or task) in a project|project_key,summary,description,issue_type
get_issue|Get a Jira issue with its status, assignee and fields|issue_key
search_issues|Search Jira issues with a JQL query|jql,max_results
transition_issue|Move a Jira issue to another workflow status|issue_key,transition
assign_issue|Assign a Jira issue to a user|issue_key,account_id
add_comment|Add a comment to a Jira issue|issue_key,body
list_projects|List Jira projects visible to the user|
get_sprint|Get the active sprint of a board and its issues|board_id
log_work|Log time spent on a Jira issue|issue_key,time_spent,comment
link_issues|Link two Jira issues (blocks, relates to, duplicates)|inward_issue,outward_issue,link_type
list_versions|List release versions (fix versions) of a project|project_key
update_issue|Update fields such as priority, labels or due date of an issue|issue_key,fields""",
"gmail": """send_email|Send an email with subject, body and optional attachments|to,subject,body,cc
search_emails|Search the mailbox with Gmail query syntax|query,max_results
read_email|Read one email message with headers and body|message_id
list_labels|List Gmail labels|
modify_labels|Add or remove labels on a message (archive, star, mark read)|message_id,add_labels,remove_labels
create_draft|Create a draft email without sending it|to,subject,body
delete_email|Move an email to the trash|message_id
get_attachment|Download an attachment of a message|message_id,attachment_id
list_threads|List conversation threads in the inbox|query,max_results
reply_to_email|Reply to an email within its thread|message_id,body""",
"calendar": """list_events|List calendar events between two dates|calendar_id,time_min,time_max
create_event|Create a calendar event with attendees and a video link|summary,start,end,attendees
update_event|Reschedule or edit an existing calendar event|event_id,start,end,summary
delete_event|Cancel and delete a calendar event|event_id
find_free_slots|Find free time slots shared by several people|attendees,duration_minutes,time_min,time_max
list_calendars|List calendars the user can see|
respond_to_invite|Accept, decline or tentatively accept a meeting invitation|event_id,response
get_event|Get details of one calendar event|event_id""",
"postgres": """query|Run a read-only SQL query against the database and return rows|sql
list_tables|List tables of a schema with row estimates|schema
describe_table|Describe the columns, types and indexes of a table|table
explain_query|Show the query plan of a SQL statement|sql
list_schemas|List database schemas|
get_table_size|Get disk size of a table and its indexes|table
list_slow_queries|List the slowest queries from pg_stat_statements|limit
list_active_connections|List active connections and what they are running|""",
"stripe": """create_customer|Create a Stripe customer with email and name|email,name
list_customers|List customers, optionally filtered by email|email,limit
create_payment_intent|Create a payment intent to charge a card|amount,currency,customer
refund_payment|Refund a charge fully or partially|payment_intent,amount
list_invoices|List invoices of a customer with their status|customer,status
create_invoice|Create a draft invoice for a customer|customer,description
create_subscription|Subscribe a customer to a price plan|customer,price
cancel_subscription|Cancel a customer's subscription|subscription_id
list_products|List products in the catalog|active
get_balance|Get the account's available and pending balance|
list_disputes|List payment disputes and chargebacks|status""",
"aws_s3": """list_buckets|List S3 buckets in the account|
list_objects|List objects in a bucket under a prefix|bucket,prefix,max_keys
get_object|Download an object from a bucket|bucket,key
put_object|Upload content to a bucket as an object|bucket,key,body,content_type
delete_object|Delete an object from a bucket|bucket,key
copy_object|Copy an object between buckets or keys|source_bucket,source_key,bucket,key
get_presigned_url|Create a temporary presigned URL to share an object|bucket,key,expires_in
get_bucket_policy|Read the access policy of a bucket|bucket""",
"notion": """search_pages|Search Notion pages and databases by title|query
get_page|Get a Notion page with its properties|page_id
create_page|Create a new page in a database or under a parent page|parent_id,title,content
append_blocks|Append paragraphs, lists or headings to a page|page_id,blocks
query_database|Query a Notion database with filters and sorts|database_id,filter,sorts
update_page_properties|Update properties of a database page|page_id,properties
list_users|List members of the Notion workspace|
add_comment|Comment on a Notion page|page_id,text""",
"linear": """create_issue|Create a Linear issue in a team with priority and estimate|team_id,title,description,priority
list_issues|List Linear issues assigned to me or a team|team_id,assignee,state
update_issue|Change state, assignee or priority of a Linear issue|issue_id,state,assignee,priority
list_cycles|List cycles (sprints) of a team|team_id
list_projects|List Linear projects and their progress|
add_comment|Comment on a Linear issue|issue_id,body
search_issues|Full-text search over Linear issues|query""",
"weather": """get_current_weather|Get current temperature, wind and conditions for a city|city,units
get_forecast|Get the daily weather forecast for the next days|city,days
get_air_quality|Get the air quality index and pollutant levels|city
get_alerts|Get active severe weather alerts for a region|region""",
"maps": """geocode|Convert an address into latitude and longitude|address
reverse_geocode|Convert coordinates into a street address|lat,lng
get_directions|Get driving, walking or transit directions between two places|origin,destination,mode
search_places|Search nearby places such as restaurants or pharmacies|query,location,radius
distance_matrix|Compute travel times and distances between many origins and destinations|origins,destinations
get_place_details|Get opening hours, rating and phone of a place|place_id""",
"kubernetes": """list_pods|List pods in a namespace with their status and restarts|namespace,label_selector
get_pod_logs|Fetch logs of a pod container|namespace,pod,container,tail_lines
describe_deployment|Describe a deployment's replicas, image and conditions|namespace,name
scale_deployment|Scale a deployment to a number of replicas|namespace,name,replicas
restart_deployment|Restart a deployment with a rolling update|namespace,name
list_events|List recent cluster events (warnings, scheduling failures)|namespace
apply_manifest|Apply a YAML manifest to the cluster|manifest
delete_pod|Delete a pod so its controller recreates it|namespace,pod
list_nodes|List cluster nodes with capacity and readiness|
get_resource_usage|Show CPU and memory usage of pods|namespace""",
"sentry": """list_issues|List unresolved error issues of a project by frequency|project,query
get_issue_details|Get an error issue with its latest stack trace|issue_id
resolve_issue|Mark an error issue as resolved|issue_id
list_releases|List releases and their crash-free rate|project
get_event|Get one error event with breadcrumbs and tags|event_id""",
"hubspot": """create_contact|Create a CRM contact with name, email and company|email,firstname,lastname,company
search_contacts|Search CRM contacts by name, email or company|query
update_deal_stage|Move a deal to another pipeline stage|deal_id,stage
list_deals|List deals in the sales pipeline with amounts|pipeline,stage
log_call|Log a sales call on a contact's timeline|contact_id,notes,duration
create_task|Create a follow-up task for a sales rep|contact_id,title,due_date""",
"spotify": """search_tracks|Search songs by title, artist or album|query,limit
play_track|Start playback of a track on the active device|track_uri
pause_playback|Pause the current playback|
create_playlist|Create a playlist for the user|name,description
add_to_playlist|Add tracks to a playlist|playlist_id,track_uris
get_recently_played|List the user's recently played tracks|limit""",
"translate": """transliterate_text|Convert text from one script to another, such as Cyrillic to Latin|text,target_script
translate_document|Translate a whole document file and keep its formatting|file,target_language
translate_text|Translate text into a target language|text,target_language,source_language
detect_language|Detect the language of a text|text
list_languages|List supported languages|""",
"docker": """list_containers|List running and stopped containers|all
run_container|Run a container from an image|image,command,env
stop_container|Stop a running container|container_id
get_container_logs|Get logs of a container|container_id,tail
list_images|List local images and their sizes|
build_image|Build an image from a Dockerfile|path,tag""",
"google_drive": """list_files|List files in a Drive folder|folder_id,page_size
search_files|Search Drive files by name or full text|query
download_file|Download the content of a Drive file|file_id
upload_file|Upload a file to Drive|name,content,folder_id
share_file|Share a Drive file with a person by email|file_id,email,role
create_folder|Create a folder in Drive|name,parent_id
export_document|Export a Google Doc as PDF or text|file_id,mime_type
move_file|Move a Drive file into another folder|file_id,folder_id""",
"confluence": """search_content|Search Confluence pages with CQL|cql
get_page|Get a Confluence page body|page_id
create_page|Create a Confluence page in a space|space_key,title,body
update_page|Update the body of a Confluence page|page_id,body,version
list_spaces|List Confluence spaces|
get_page_children|List child pages of a page|page_id""",
"zendesk": """list_tickets|List support tickets by status and priority|status,priority
get_ticket|Get a support ticket with its conversation|ticket_id
create_ticket|Open a new support ticket for a customer|subject,description,requester_email
reply_to_ticket|Reply publicly or add an internal note to a ticket|ticket_id,body,public
update_ticket_status|Change a ticket's status (open, pending, solved)|ticket_id,status
search_tickets|Search tickets by keywords|query""",
"shopify": """list_orders|List store orders with fulfillment and payment status|status,created_at_min
get_order|Get an order with line items and shipping address|order_id
create_product|Create a product with title, price and variants|title,price,vendor
update_inventory|Set the inventory level of a product variant|inventory_item_id,location_id,available
list_products|List products in the store|collection_id,limit
fulfill_order|Mark an order as fulfilled with a tracking number|order_id,tracking_number
create_discount_code|Create a discount code for a price rule|price_rule_id,code
list_customers|List store customers and their total spent|limit""",
"datadog": """query_metrics|Query a time series metric over a time range|query,from,to
list_monitors|List monitors and their alert state|tags
mute_monitor|Silence a monitor for a while|monitor_id,end
search_logs|Search logs with a query over a time range|query,from,to
create_dashboard|Create a dashboard with widgets|title,widgets
list_incidents|List declared incidents|status""",
"pagerduty": """list_incidents|List open incidents and who is on call for them|status,service_id
acknowledge_incident|Acknowledge an incident to stop escalation|incident_id
resolve_incident|Resolve an incident|incident_id
get_oncall|Show who is on call for an escalation policy|escalation_policy_id
trigger_incident|Trigger a new incident on a service|service_id,title""",
"airtable": """list_records|List records of an Airtable table with a formula filter|base_id,table,filter_formula
create_record|Create a record in an Airtable table|base_id,table,fields
update_record|Update fields of an Airtable record|base_id,table,record_id,fields
delete_record|Delete an Airtable record|base_id,table,record_id
list_bases|List Airtable bases|""",
"figma": """get_file|Get a Figma file's document tree|file_key
export_images|Export frames or nodes of a Figma file as PNG or SVG|file_key,ids,format
list_comments|List comments on a Figma file|file_key
post_comment|Post a comment on a Figma file|file_key,message""",
"twilio": """send_sms|Send an SMS text message to a phone number|to,body
make_call|Place an automated voice call that reads a message|to,message
list_messages|List sent and received SMS messages|to,date_sent
lookup_phone_number|Look up carrier and type of a phone number|phone_number""",
}
def desc(p):
    return {"owner":"Repository owner","repo":"Repository name","channel":"Channel id","limit":"Maximum results","query":"Search text"}.get(p, p.replace("_"," ").capitalize())
out=[]
for srv, block in spec.items():
    for line in block.strip().split("\n"):
        name, d, params = line.split("|")
        props = {p: {"type":"string","description":desc(p)} for p in params.split(",") if p}
        out.append({"server":srv,"name":name,"description":d,"inputSchema":{"type":"object","properties":props}})
print(len(out), file=__import__("sys").stderr)
json.dump(out, open(__import__("os").path.join(__import__("os").path.dirname(__file__), "synthetic_tools.json"), "w"), indent=1)
